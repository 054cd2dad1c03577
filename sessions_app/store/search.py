"""Search across every session a user may read (issue 18): the one reader of the search index.

Hits are flat, ranked or newest first: the RANK_WINDOW most recently indexed matches are fetched;
when that is all of them they are put in relevance order (ranked), else they stay newest first
and the answer says so (ranking every match of a very common word would cost seconds).
"Newest" is the order documents were indexed in (their id): a session's entries in file order,
an append after everything before it. The full-text index hands matches over in that order, so
the newest few of a million are found without sorting them all by entry date (15x faster on
SQLite); an old file imported today counts as new. On PostgreSQL two shapes read otherwise, with
the same hits: a narrow date range is read first (_range_first), and a phrase with a filter or
within one session is looked for among the newest filtered documents first
(_newest_phrase_matches), which may answer newest first without counting every match
(ranked=false). Within one session "newest" is (seq, id), and so is its cursor (_below).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection

from sessions_app.access import audit
from sessions_app.core import searchtext
from sessions_app.core.searchtext import Query, QueryError
from sessions_app.errors import SearchInvalid, SearchTooBroad
from sessions_app.models import Session
from sessions_app.store import deadline, search_index, selectors

RANK_WINDOW = 500
# The roles the index stores (searchtext.entry_docs), by their lower case: role:toolresult finds them.
_STORED_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "compaction", "branch_summary", "name")
ROLES = {r.lower(): r for r in (*_STORED_ROLES, "label")}
MAX_LIMIT = 100


class BadCursor(SearchInvalid):
    pass


@dataclass(slots=True)
class Hit:
    session_id: str
    session_name: str
    entry_id: str
    leaf_id: str
    role: str
    timestamp: str
    snippet: str
    kind: str


@dataclass(slots=True)
class Result:
    hits: list[Hit]
    next: str | None
    ranked: bool
    query: Query
    # Sessions the user may read whose newest entries are not indexed yet (public id, name): the
    # hits may miss them, and whoever shows the hits says so.
    indexing: list[tuple[str, str]]


def _cursor_out(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def _cursor_in(text: str) -> dict[str, Any]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError:
        raise BadCursor("cursor: not one this API gave out", field="cursor") from None
    if not isinstance(data, dict) or data.get("m") not in ("rank", "time"):
        raise BadCursor("cursor: not one this API gave out", field="cursor")
    if data["m"] == "rank" and type(data.get("o")) is not int:
        raise BadCursor("cursor: not one this API gave out", field="cursor")
    if data["m"] == "time" and type(data.get("i")) is not int:
        raise BadCursor("cursor: not one this API gave out", field="cursor")
    return data


def _readable(user: User | AnonymousUser, query: Query) -> tuple[str, list[Any]]:
    """SQL (and its parameters) selecting the pks of the sessions this search may see: the
    user's own and their teams' (selectors.session_list_for_user), narrowed by team: and session:."""
    sessions = selectors.session_list_for_user(user=user).order_by()
    if "team" in query.filters:
        sessions = sessions.filter(team__name__iexact=query.filters["team"])
    if "session" in query.filters:
        sessions = sessions.filter(public_id=query.filters["session"])
    if connection.vendor == "postgresql":
        # The pks themselves, not a subquery: PostgreSQL guesses a subquery's sessions at one row,
        # then reads every document of each session through the session index and tests them all
        # (a phrase with role:user took most of a second); against a list of values it weighs the
        # sessions' share of the documents from its statistics.
        pks = list(sessions.values_list("pk", flat=True))
        if len(pks) == 1:  # an equality: the (session, seq) index can give its newest first
            return "d.session_id = %s", pks
        return "d.session_id = ANY(%s)", [pks]
    sql, params = sessions.values("pk").query.sql_with_params()
    return f"d.session_id IN ({sql})", list(params)


def _match(query: Query) -> tuple[str, str, list[Any], str]:
    """(FROM, WHERE, params, score expression) of the text part of the query, per vendor."""
    if not query.has_text:
        return "sessions_app_searchdoc d", "1=1", [], "0"
    if connection.vendor == "sqlite":
        # With label:, the labelled entries' few documents first (CROSS JOIN: SQLite keeps the
        # left table outer), each then looked up in the text index by its rowid; else the text
        # index's matches, which a common word makes hundreds of thousands, would each be tested.
        # Not with a prefix FTS5 keeps no index of: each lookup would merge the lists of every
        # term it begins again. Its matches are then read once, the text index outer (CROSS
        # JOIN), and tested against the labelled documents' ids (_filters) before any is joined.
        joined = (
            "sessions_app_searchdoc d CROSS JOIN sessions_app_search_fts f ON f.rowid = d.id"
            if "label" in query.filters and not _unindexed_prefix(query)
            else "sessions_app_search_fts f CROSS JOIN sessions_app_searchdoc d ON d.id = f.rowid"
            if "label" in query.filters
            else "sessions_app_search_fts f JOIN sessions_app_searchdoc d ON d.id = f.rowid"
        )
        return (
            joined,
            "sessions_app_search_fts MATCH %s",
            [query.fts5()],
            "bm25(sessions_app_search_fts)",
        )
    parts: list[str] = []
    params: list[Any] = []
    for word in query.words:
        parts.append("plainto_tsquery('simple', %s)")
        params.append(word)
    for phrase in query.phrases:
        parts.append("phraseto_tsquery('simple', %s)")
        params.append(" ".join(phrase))
    for prefix in query.prefixes:
        # Word characters only (searchtext.parse): nothing here is tsquery syntax but the ":*".
        parts.append("to_tsquery('simple', %s)")
        params.append(f"'{prefix}':*")
    tsquery = " && ".join(f"({p})" for p in parts)
    return "sessions_app_searchdoc d", f"d.tsv @@ ({tsquery})", params, f"-ts_rank(d.tsv, ({tsquery}))"


def _filters(query: Query) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    f = query.filters
    if f.get("thinking", "").lower() not in ("yes", "include", "only", "true"):
        where.append("d.kind <> 'thinking'")
    elif f["thinking"].lower() == "only":
        where.append("d.kind = 'thinking'")
    if "role" in f:
        role = ROLES.get(f["role"].lower())
        # A plain equality on the stored spelling: the planner knows each role's share of the
        # documents; of LOWER(role) it knows nothing and takes a common role for a rare one.
        where.append("d.role = %s" if role else "LOWER(d.role) = LOWER(%s)")
        params.append(role or f["role"])
    # On the columns themselves, not on LOWER() of them: PostgreSQL then weighs the pattern against
    # the column's common values; of an expression it knows nothing, takes the filter for a rare
    # one and reads every document of the readable sessions (SQLite's LIKE ignores ASCII case).
    like = "ILIKE" if connection.vendor == "postgresql" else "LIKE"
    if "tool" in f:
        tool = _like(f["tool"])  # one of the space-separated names
        where.append(f"(d.tool {like} %s OR d.tool {like} %s OR d.tool {like} %s OR d.tool {like} %s)")
        params += [tool, f"{tool} %", f"% {tool}", f"% {tool} %"]
    if "model" in f:
        where.append(f"d.model {like} %s")
        params.append(f"%{_like(f['model'])}%")
    if "label" in f:
        # The labelled entries found first, then their documents by (session, seq), which has an
        # index: tested per document, the labels of its session took minutes on 1M documents. A
        # label's words are in the text index, so the label rows come from it. (A label's own
        # document is at the label entry's seq: it is not among them; the target's are.)
        words = [w.lower() for w in searchtext.WORD.findall(f["label"])]
        if not words:
            found, found_params = "1=1", []  # (no word to look up: every label row is read)
        elif connection.vendor == "postgresql":
            # Its words, as the index split them: PostgreSQL's parser keeps "bug-828" whole, or "-828".
            found, found_params = "l.tsv @@ plainto_tsquery('simple', %s)", [" ".join(words)]
        else:
            found = "l.id IN (SELECT rowid FROM sessions_app_search_fts WHERE sessions_app_search_fts MATCH %s)"
            found_params = [searchtext.Query(phrases=[words]).fts5()]
        labelled = (
            "SELECT e.session_id, e.seq FROM sessions_app_searchdoc l "
            "JOIN sessions_app_entry e ON e.session_id = l.session_id AND e.entry_id = l.entry_id "
            f"WHERE {found} AND l.kind = 'label' AND LOWER(l.text) = LOWER(%s)"
        )
        if _unindexed_prefix(query):
            # The text index's matches are read first (_match): their ids tested against the
            # labelled documents', read once; the unary + keeps SQLite from looking each of those
            # up in the text index by its rowid instead (the lists merged again for each).
            where.append(
                f"+f.rowid IN (SELECT t.id FROM sessions_app_searchdoc t WHERE (t.session_id, t.seq) IN ({labelled}))"
            )
        else:
            where.append(f"(d.session_id, d.seq) IN ({labelled})")
        params += [*found_params, f["label"]]
    bounds, bound_params = _date_range(query, "d")
    return [*where, *bounds], [*params, *bound_params]


def _date_range(query: Query, alias: str) -> tuple[list[str], list[Any]]:
    """The conditions of the query's after:/before: on the documents named alias, and their params."""
    bounds: list[str] = []
    params: list[Any] = []
    if query.after_ms is not None:
        bounds.append(f"{alias}.ts_ms >= %s")
        params.append(query.after_ms)
    if query.before_ms is not None:
        bounds.append(f"{alias}.ts_ms < %s")
        params.append(query.before_ms)
    return bounds, params


def _unindexed_prefix(query: Query) -> bool:
    """Whether, on SQLite, the query has a prefix of a length FTS5 keeps no prefix index of
    (search_index.FTS_PREFIXES): each time the text index is asked about it, whether for one
    document or all, it merges the lists of every term the prefix begins."""
    return connection.vendor == "sqlite" and any(len(p) not in search_index.FTS_PREFIXES for p in query.prefixes)


def _like(text: str) -> str:
    # LIKE's "%" dropped from a filter value; a "_" (common in tool names) matches itself and any
    # other character: it can only widen the filter a little.
    return text.replace("%", "")


def _where(user: User | AnonymousUser, query: Query) -> tuple[str, str, list[Any], str, list[Any]]:
    """(FROM, WHERE, params, score expression, score params) of a query among user's sessions."""
    source, match, params, score = _match(query)
    readable, readable_params = _readable(user, query)
    where, filter_params = _filters(query)
    conditions = [match, readable, *where]
    score_params = params if score != "0" and connection.vendor != "sqlite" else []
    return source, " AND ".join(conditions), [*params, *readable_params, *filter_params], score, score_params


def matching_sessions(*, user: User | AnonymousUser, q: str) -> list[int]:
    """The pks of the sessions with a hit for q (the session list's text filter); [] when q asks
    nothing. A bad filter reads as no match."""
    try:
        query = searchtext.parse(q)
    except QueryError:
        return []
    if query.empty or not user.is_authenticated:
        return []
    with time_budget():
        source, where, params, _, _ = _where(user, query)
        with connection.cursor() as c:
            c.execute(f"SELECT DISTINCT d.session_id FROM {source} WHERE {where}", params)
            return [row[0] for row in c.fetchall()]


def search(*, user: User | AnonymousUser, q: str, limit: int = 20, cursor: str | None = None) -> Result:
    """The hits of q among the sessions user may read. SearchInvalid (422) for a bad filter or a
    cursor this did not give out; SearchTooBroad (422) for a search stopped at its time budget."""
    try:
        query = searchtext.parse(q)
    except QueryError as error:
        raise SearchInvalid(str(error), field="q") from None
    limit = max(1, min(limit, MAX_LIMIT))
    state = _cursor_in(cursor) if cursor else None
    if query.empty or not user.is_authenticated:
        return Result([], None, True, query, [])
    with time_budget():
        return _search(user, query, limit, state)


@contextmanager
def time_budget() -> Iterator[None]:
    """The database work of one search, stopped PIWEB_SEARCH_TIMEOUT_MS (0: never) after it began,
    with SearchTooBroad."""
    ms = settings.PIWEB_SEARCH_TIMEOUT_MS
    if ms <= 0:  # (no budget)
        yield
        return

    def too_broad() -> SearchTooBroad:
        return SearchTooBroad(
            f"This search took longer than {ms / 1000:g} s and was stopped: add a word or a filter to narrow it",
            field="q",
        )

    with deadline.within(ms / 1000, too_broad):
        yield


def _search(user: User | AnonymousUser, query: Query, limit: int, state: dict[str, Any] | None) -> Result:
    source, where, all_params, score, score_params = _where(user, query)
    # The same id; on SQLite named as the FTS5 table's rowid, the order it yields matches in.
    key = "f.rowid" if connection.vendor == "sqlite" and query.has_text else "d.id"
    order = f"{key} DESC"
    if connection.vendor == "postgresql" and "d.session_id = %s" in where:
        # One session: its newest documents through the (session, seq) index, the same order (a
        # session's documents are indexed in seq order). By id alone PostgreSQL reads back from
        # the newest document of all, through every later session, before reaching this one's.
        order = "d.seq DESC, d.id DESC"
    below = _below(order, key, state["i"]) if state is not None and state["m"] == "time" else None
    if below is not None:
        where += f" AND {below[0]}"
        all_params += below[1]
    window = max(RANK_WINDOW, limit) + 1
    probed = _newest_phrase_matches(user, query, state, below, window, limit, order)
    found, counted = probed if probed is not None else (None, True)
    if found is None:
        # A narrow date range read first, the rest tested on its documents: newest first by id,
        # a range at the start of every session is reached only after each session's later rows.
        scan, scan_params = _range_first(query) if order == f"{key} DESC" else (None, [])
        span, span_params = _session_span(user, query, key)
        sql = f"SELECT {key} FROM {scan or source} WHERE {where}{span} ORDER BY {order} LIMIT %s"
        with connection.cursor() as c:
            c.execute(sql, [*scan_params, *all_params, *span_params, window])
            found = [row[0] for row in c.fetchall()]
    page: list[int]
    if counted and ((state is None and len(found) <= RANK_WINDOW) or (state is not None and state["m"] == "rank")):
        # Scored only now, and only these: a score computed for every match of a common word
        # before the newest were picked would cost most of the query.
        scores = _scores(query, source, where, all_params, score, score_params, key, found)
        found.sort(key=lambda pk: (scores.get(pk, 0.0), -pk))
        offset = state["o"] if state is not None else 0
        page = found[offset : offset + limit]
        more = len(found) > offset + limit
        next_cursor = _cursor_out({"m": "rank", "o": offset + limit}) if more else None
        ranked = True
    else:
        page = found[:limit]
        more = len(found) > limit
        next_cursor = _cursor_out({"m": "time", "i": page[-1]}) if more and page else None
        ranked = False
    return Result(_hits(page, query), next_cursor, ranked, query, _indexing(user))


INDEXING_SHOWN = 20  # sessions named as still indexing, at most


def _indexing(user: User | AnonymousUser) -> list[tuple[str, str]]:
    readable = selectors.session_list_for_user(user=user).filter(indexed_seq__isnull=False)
    return list(readable.order_by("-updated_at").values_list("public_id", "name")[:INDEXING_SHOWN])


PROBE = 10_000  # the newest documents past the filters a phrase is first looked for in
RANGE_FIRST = 40_000  # a date range with fewer documents than this is read first (PostgreSQL)


def _below(order: str, key: str, pk: int) -> tuple[str, list[Any]]:
    """The condition (and its params) of the documents past a newest-first cursor's last hit pk.
    Within one session, (seq, id) below the hit's: the same documents (a session's are indexed
    in seq order), but a bound on the (session, seq) index the planner can weigh; of id < pk it
    takes the share of all documents below pk, and sorted a whole old session to page it."""
    if order.startswith("d.seq"):
        with connection.cursor() as c:
            c.execute("SELECT seq FROM sessions_app_searchdoc WHERE id = %s", [pk])
            row = c.fetchone()
        if row is not None:
            return "(d.seq, d.id) < (%s, %s)", [row[0], pk]
    return f"{key} < %s", [pk]


def _newest_phrase_matches(
    user: User | AnonymousUser,
    query: Query,
    state: dict[str, Any] | None,
    below: tuple[str, list[Any]] | None,
    window: int,
    limit: int,
    order: str,
) -> tuple[list[int], bool] | None:
    """On PostgreSQL, a phrase with role:, tool: or model:, or within one session (without a date
    range), looked for first among the PROBE newest documents those filters let through, in the
    query's order. PostgreSQL prices a phrase as if its words were unrelated, far rarer than
    words that go together are side by side, and reads every document with all the words instead
    (a second and more on the 1M corpus; within one session, each of its documents with the
    words, where its newest few thousand held a window of matches); a GIN index keeps no
    positions, so a phrase of common words seldom side by side costs as much whatever the plan.
    Not when a word is rare: its few documents come from the text index faster than a probe.

    (the newest matches, whether they are all there is to rank): the newest `window` matches
    when the probe holds them, or every match when the probe saw every document past the filters
    (both counted); more than a page of them, but not all (not counted: the answer is newest
    first, and its next page goes on below its last hit); else None (the whole query then)."""
    if connection.vendor != "postgresql" or not query.phrases:
        return None
    if not {"role", "tool", "model", "session"} & set(query.filters):
        return None
    readable, readable_params = _readable(user, query)
    if readable == "d.session_id = %s":
        # One session: its newest documents through the (session, seq) index (the query's order).
        # A date range may lie deep in it and the walk read all of it: the whole query then.
        if query.after_ms is not None or query.before_ms is not None:
            return None
    elif not {"role", "tool", "model"} & set(query.filters):
        return None
    if _rare_word(query):
        return None
    _, match, match_params, _ = _match(query)
    where, filter_params = _filters(query)
    inner = " AND ".join([readable, *where])
    params = [*readable_params, *filter_params]
    if below is not None:
        inner += f" AND {below[0]}"
        params += below[1]
    # The matches, and the probe's last document (n = PROBE) if it gets that far: the rows are
    # read only until the window is full, and the last one tells a full probe from every document.
    sql = (
        f"SELECT d.id, d.m, d.n FROM (SELECT d.id, d.seq, {match} AS m, "
        f"row_number() OVER (ORDER BY {order}) AS n FROM sessions_app_searchdoc d WHERE {inner} "
        f"ORDER BY {order} LIMIT %s) d WHERE d.m OR d.n = %s ORDER BY {order} LIMIT %s"
    )
    with connection.cursor() as c:
        c.execute(sql, [*match_params, *params, PROBE, PROBE, window + 1])
        rows = c.fetchall()
    found = [pk for pk, matched, _ in rows if matched][:window]
    if len(found) == window or all(n < PROBE for _, _, n in rows):
        return found, True
    if len(found) > limit and (state is None or state["m"] == "time"):
        return found, False
    return None


def _session_span(user: User | AnonymousUser, query: Query, key: str) -> tuple[str, list[Any]]:
    """On SQLite, with session: naming one readable session, a condition (and its params) on the
    ids of its documents' span, to AND to the query: FTS5 then seeks its lists of matches to the
    span, where newest first it read every later session's matches before this one's. (Not in
    _scores, which reads the span of the ids it is given.)"""
    if connection.vendor != "sqlite" or "session" not in query.filters:
        return "", []
    sessions = selectors.session_list_for_user(user=user).filter(public_id=query.filters["session"])
    pks = list(sessions.order_by().values_list("pk", flat=True)[:2])
    if len(pks) != 1:
        return "", []
    with connection.cursor() as c:
        c.execute(
            "SELECT (SELECT min(id) FROM sessions_app_searchdoc WHERE session_id = %s), "
            "(SELECT max(id) FROM sessions_app_searchdoc WHERE session_id = %s)",
            [pks[0], pks[0]],
        )
        first, last = c.fetchone()
    return f" AND {key} BETWEEN %s AND %s", [first, last]


def _range_first(query: Query) -> tuple[str | None, list[Any]]:
    """On PostgreSQL, when the query's date range holds fewer than RANGE_FIRST documents (counted
    up to that bound through the ts_ms index) and no word of it is rare, a FROM reading the range
    first, else None. (A rare word's few matches come from the text index faster than the range.)"""
    if connection.vendor != "postgresql" or (query.after_ms is None and query.before_ms is None):
        return None, []
    if _rare_word(query):
        return None, []
    bounds, params = _date_range(query, "r")
    range_sql = " AND ".join(bounds)
    with connection.cursor() as c:
        count = f"SELECT count(*) FROM (SELECT 1 FROM sessions_app_searchdoc r WHERE {range_sql} LIMIT %s) r"
        c.execute(count, [*params, RANGE_FIRST])
        if c.fetchone()[0] >= RANGE_FIRST:
            return None, []
    # OFFSET 0 keeps the subquery whole: the planner would otherwise fold it back into the walk by id.
    return f"(SELECT * FROM sessions_app_searchdoc r WHERE {range_sql} OFFSET 0) d", params


def _rare_word(query: Query) -> bool:
    """Whether a word of the query (alone or in a phrase) is missing from the text index's most
    common elements, as PostgreSQL's statistics list them (no statistics yet: none is rare)."""
    words = [*query.words, *(w for phrase in query.phrases for w in phrase)]
    if not words:
        return False
    with connection.cursor() as c:
        c.execute(
            "SELECT most_common_elems::text::text[] FROM pg_stats WHERE schemaname = current_schema() "
            "AND tablename = 'sessions_app_searchdoc' AND attname = 'tsv'"
        )
        row = c.fetchone()
    if row is None or row[0] is None:
        return False
    common = set(row[0])
    return any(w.lower() not in common for w in words)


def _scores(
    query: Query,
    source: str,
    where: str,
    params: list[Any],
    score: str,
    score_params: list[Any],
    key: str,
    ids: list[int],
) -> dict[int, float]:
    """Relevance of these matches (lower is better), by id; none without words to rank by."""
    if score == "0" or not ids:
        return {}
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            # The text index's matches in the span of these ids, read once, each kept if it is
            # one of them (the unary + keeps SQLite from looking each id up by its rowid): bm25
            # counts the documents of every term of the query at each such lookup: a common word's
            # count once per id of the window. They all passed the other conditions already.
            c.execute(
                "SELECT rowid, bm25(sessions_app_search_fts) FROM sessions_app_search_fts "
                f"WHERE sessions_app_search_fts MATCH %s AND +rowid IN ({marks}) AND rowid BETWEEN %s AND %s",
                [query.fts5(), *ids, min(ids), max(ids)],
            )
            return {row[0]: float(row[1]) for row in c.fetchall()}
        c.execute(
            f"SELECT {key}, {score} FROM {source} WHERE {where} AND {key} IN ({marks})",
            [*score_params, *params, *ids],
        )
        return {row[0]: float(row[1]) for row in c.fetchall()}


def _hits(ids: list[int], query: Query) -> list[Hit]:
    if not ids:
        return []
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as c:
        c.execute(
            "SELECT d.id, d.session_id, d.entry_id, d.role, d.kind, d.text, e.timestamp "
            "FROM sessions_app_searchdoc d LEFT JOIN sessions_app_entry e "
            f"ON e.session_id = d.session_id AND e.entry_id = d.entry_id WHERE d.id IN ({marks})",
            ids,
        )
        rows = {r[0]: r for r in c.fetchall()}
    sessions = {s.pk: s for s in Session.objects.filter(pk__in={r[1] for r in rows.values()}).only("public_id", "name")}
    terms = query.highlight_terms()
    hits: list[Hit] = []
    for pk in ids:
        row = rows.get(pk)
        if row is None or row[1] not in sessions:
            continue
        session = sessions[row[1]]
        hits.append(
            Hit(
                session_id=session.public_id,
                session_name=session.name,
                entry_id=row[2],
                leaf_id=row[2],
                role=row[3] if row[4] != "thinking" else "thinking",
                timestamp=row[6] or "",
                snippet=searchtext.snippet(row[5], terms),
                kind=row[4],
            )
        )
    return hits


def search_audited(
    *, user: User | AnonymousUser, q: str, limit: int = 20, cursor: str | None = None, via: str
) -> Result:
    """search, recorded in the audit trail as a read (what was asked, how many hits came back); a
    search stopped at its time budget too, as such (who asks what costs the database most)."""
    q = q.replace("\x00", "")  # PostgreSQL stores no NUL, even in the audit record
    try:
        result = search(user=user, q=q, limit=limit, cursor=cursor)
    except SearchTooBroad:
        audit.audit_record(
            actor=user, action="search", obj_type="search", extra={"q": q[:500], "stopped": True, "via": via}
        )
        raise
    audit.audit_record(
        actor=user, action="search", obj_type="search", extra={"q": q[:500], "hits": len(result.hits), "via": via}
    )
    return result
