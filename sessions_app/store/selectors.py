"""Reads. Every permission-checked fetch goes through session_get_for_user."""

from __future__ import annotations

import contextlib
import itertools
import operator
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from django.contrib.auth.models import AnonymousUser, User
from django.db import DataError, OperationalError, connection, transaction
from django.db.models import Q, QuerySet

from sessions_app.access import permissions
from sessions_app.access.permissions import Capability
from sessions_app.core import context as ctx
from sessions_app.core import jsjson
from sessions_app.core.compare import Split, split_paths
from sessions_app.core.files_changed import FileChange, files_changed
from sessions_app.core.tree import Node, labels_in_force
from sessions_app.errors import EntryNotFound
from sessions_app.models import BIG_COLUMNS, VISIBLE, Entry, Membership, Session
from sessions_app.store import tree_nodes
from sessions_app.store.batches import select_in
from sessions_app.store.importing import bulkwrite


def session_get_for_user(*, user: User | AnonymousUser, public_id: str, need: Capability = "read") -> Session:
    """The session if this user may `need` it (permissions.py): SessionNotFound if missing or not theirs
    to see, SessionForbidden if they may see it but not do that."""
    return permissions.session_get_for_user(user=user, public_id=public_id, need=need)


def session_list_for_user(*, user: User | AnonymousUser) -> QuerySet[Session]:
    """The user's personal sessions and those of their teams."""
    if not user.is_authenticated:
        return Session.objects.none()
    teams = Membership.objects.filter(user_id=user.pk).values("team_id")
    mine = Q(owner_id=user.pk, team__isnull=True) | Q(team_id__in=teams)
    return Session.objects.filter(mine, VISIBLE).defer(*BIG_COLUMNS).order_by("-modified_ms", "-id")


def entry_get(*, session: Session, entry_id: str) -> Entry:
    entry = Entry.objects.filter(session=session, entry_id=entry_id).first()
    if entry is None:
        raise _not_found(entry_id)
    return entry


def entry_require(*, session: Session, entry_id: str) -> None:
    """EntryNotFound unless the session has this entry: no row read or model built (what moving
    the leaf, forking or sharing need to know)."""
    if not entry_ids_present(session=session, ids=[entry_id]):
        raise _not_found(entry_id)


def entry_ids_present(*, session: Session, ids: Iterable[str]) -> set[str]:
    """Which of these entry ids the session has (one indexed query, no ORM overhead: this runs on
    every append)."""
    sql = "SELECT entry_id FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({marks})"
    return {row[0] for row in select_in(sql, [session.pk], dict.fromkeys(ids))}


def _not_found(entry_id: str) -> EntryNotFound:
    return EntryNotFound(f"Entry {entry_id} not found", entryId=entry_id)


def entry_node(entry: Entry) -> Node:
    return Node(id=entry.entry_id, parent_id=entry.parent_id, type=entry.type, data=jsjson.loads(entry.raw))


def _walk_sql(carried: str, out: str, join: str = "") -> str:
    """The walk from an entry up to the root (or to a stop entry, params: session, entry, session,
    stop or ""): entry_id, parent_id, type, `out` (of the `carried` columns, and of what `join`
    joins to the walk, `up`) and the steps up, n. The columns travel up with it: no second lookup
    per entry and no sort in SQL."""
    e_carried = ", ".join(f"e.{c.strip()}" for c in carried.split(","))
    return f"""
WITH RECURSIVE up(entry_id, parent_id, type, {carried}, n) AS (
    SELECT entry_id, parent_id, type, {carried}, 0 FROM sessions_app_entry WHERE session_id = %s AND entry_id = %s
    UNION ALL
    SELECT e.entry_id, e.parent_id, e.type, {e_carried}, up.n + 1 FROM sessions_app_entry e JOIN up
        ON e.session_id = %s AND e.entry_id = up.parent_id
    WHERE up.entry_id <> %s
)
SELECT up.entry_id, up.parent_id, up.type, {out}, up.n FROM up {join}
"""


# SQLite hands the lines over as the UTF-8 bytes it stores: orjson parses those directly, where a
# str would be decoded and then encoded again (~25% of a 1,000-message context).
_WALKS = {"sqlite": _walk_sql("raw", "CAST(raw AS BLOB)"), "postgresql": _walk_sql("raw", "raw")}
# The context's walk: a message entry brings only its message's JSON, so that it reaches the
# response undecoded: the bytes its span (models.MessageSpan) names, cut out with no parse; without
# one, what the database's JSON functions take out of the line (one parse, in C). Those give the
# value's JSON text (PostgreSQL's json, not jsonb, as written; SQLite's with strings and numbers as
# written) and, as JSON.parse, the last of duplicate "message" members: SQLite's `->` would give the
# first, json_each gives them all.
_SPAN_JOIN = "LEFT JOIN sessions_app_messagespan s ON s.session_id = up.session_id AND s.seq = up.seq"
_MESSAGE_OR_LINE = {
    "sqlite": """CASE WHEN type <> 'message' THEN CAST(raw AS BLOB)
        WHEN s.start IS NOT NULL THEN substr(CAST(raw AS BLOB), s.start, s.length)
        ELSE CAST((SELECT CASE WHEN m.type = 'object' THEN m.value END FROM json_each(raw) AS m
            WHERE m.key = 'message' ORDER BY m.id DESC LIMIT 1) AS BLOB) END""",
    "postgresql": """CASE WHEN type <> 'message' THEN convert_to(raw, 'UTF8')
        WHEN s.start IS NOT NULL THEN substring(convert_to(raw, 'UTF8') FROM s.start FOR s.length)
        ELSE convert_to((raw::json -> 'message')::text, 'UTF8') END""",
}
_CONTEXT_WALKS = {
    vendor: _walk_sql("raw, seq, session_id", column, _SPAN_JOIN) for vendor, column in _MESSAGE_OR_LINE.items()
}


def _walk(sql: str, session: Session, leaf_id: str, stop_id: str | None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk, leaf_id, session.pk, stop_id or ""])
        rows: list[tuple[Any, ...]] = cursor.fetchall()
    rows.sort(key=lambda r: -r[4])
    return rows


def path_nodes(*, session: Session, leaf_id: str, stop_id: str | None = None) -> list[Node]:
    """Root-first path ending at leaf_id; starts at stop_id instead of the root if it is on the way."""
    return _nodes(_walk(_WALKS[connection.vendor], session, leaf_id, stop_id))


def _nodes(rows: list[tuple[Any, ...]]) -> list[Node]:
    """Nodes of (entry_id, parent_id, type, line) rows."""
    return [Node(id=r[0], parent_id=r[1], type=r[2], data=jsjson.loads(r[3])) for r in rows]


# path_heads' walk: the tree's node columns instead of the line.
_HEADS = _walk_sql("role, timestamp", "role, timestamp")


def path_heads(*, session: Session, leaf_id: str) -> list[Node]:
    """path_nodes without the lines: each Node's data holds only the stored "role" and "timestamp"
    (what GET /tree's node shows), where the path's shape is all that is wanted."""
    with connection.cursor() as cursor:
        cursor.execute(_HEADS, [session.pk, leaf_id, session.pk, ""])
        rows = cursor.fetchall()
    rows.sort(key=lambda r: -r[5])
    return [Node(id=r[0], parent_id=r[1], type=r[2], data={"role": r[3], "timestamp": r[4]}) for r in rows]


def entry_lines(*, session: Session, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """These entries' lines, parsed, by id: the few a page draws out of a long path."""
    raw = "CAST(raw AS BLOB)" if connection.vendor == "sqlite" else "raw"
    sql = f"SELECT entry_id, {raw} FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({{marks}})"
    with bulkwrite.gc_paused():  # thousands of parsed lines kept at once (compare_split says why)
        return {row[0]: jsjson.loads(row[1]) for row in select_in(sql, [session.pk], dict.fromkeys(ids))}


def compare_split(*, session: Session, a: str, b: str) -> Split:
    """Paths to a and to b (path_heads: no lines read), cut below where they part
    (core/compare.py); EntryNotFound names an id the session does not have."""
    # Two long paths are many small objects kept at once: the collector's full passes over them
    # would cost more than reading them (bulkwrite.py).
    with bulkwrite.gc_paused():
        path_a = path_heads(session=session, leaf_id=a)
        if not path_a:
            raise _not_found(a)
        path_b = path_a if b == a else path_heads(session=session, leaf_id=b)
        if not path_b:
            raise _not_found(b)
        return split_paths(path_a, path_b)


def compare_json(*, session: Session, a: str, b: str) -> dict[str, Any]:
    """GET /compare: {"ancestorId", "a", "b"}, each side's entries as GET /tree's nodes."""
    split = compare_split(session=session, a=a, b=b)
    resolved = labels(session=session)

    def node(n: Node) -> dict[str, Any]:
        return tree_nodes.node_dict(n.id, n.parent_id, n.type, n.data["role"], resolved.get(n.id), n.data["timestamp"])

    return {"ancestorId": split.ancestor_id, "a": [node(n) for n in split.a], "b": [node(n) for n in split.b]}


def _context_rows(*, session: Session, leaf_id: str, start: _Start) -> list[tuple[Any, ...]]:
    """The path from start's stop (else the root) to the leaf as core.context.Row rows, root first:
    each message entry's message as stored JSON (what the context needs of it, left undecoded),
    each other entry's line."""
    rows = _by_runs(_CONTEXT_RUNS[connection.vendor], session, leaf_id, start)
    if rows is None:
        rows = _walk(_CONTEXT_WALKS[connection.vendor], session, leaf_id, start.stop)
    return rows


# Where a range begins going up: the last run start at or before `below`, but not before the stop
# (params: the stop's seq, or 0, twice; the session); NULL where none is recorded.
_RUN_FIRST = """CAST((SELECT CASE WHEN MAX(h.seq) < %s THEN %s ELSE MAX(h.seq) END FROM sessions_app_runstart h
    WHERE h.session_id = %s AND h.seq <= {below}) AS bigint)"""


def _runs_sql(out: str, join: str = "") -> str:
    """The path as ranges of file order (store/run_starts.py): from the leaf, the last run start at
    or before it begins its range; the parent of that start ends the next range; and so on up to
    the stop (else the root). Each range is read in order from the (session, seq) index: no lookup
    per entry of its parent, which costs more than the lines themselves. Gives entry_id,
    parent_id, type, `out` (of the entry, `up`, and what `join` joins to it) and seq, in no
    order: sorted here, where the ranges come in order (an ORDER BY copies every line into a
    sorter). (CROSS JOIN: SQLite keeps the runs outside; it would scan the entries past the stop
    for each.) Each step goes to a lower seq, so it ends whatever the run starts say: a parent
    written after its child (pi can write one) would otherwise, with the run starts above it not
    yet recorded, name the same range again and again; such a path is walked."""
    return f"""
WITH RECURSIVE runs(first, last) AS (
    SELECT {_RUN_FIRST.format(below="%s")}, CAST(%s AS bigint)
    UNION ALL
    SELECT {_RUN_FIRST.format(below="p.seq")}, CAST(p.seq AS bigint)
    FROM runs CROSS JOIN sessions_app_entry f CROSS JOIN sessions_app_entry p
    WHERE f.session_id = %s AND f.seq = runs.first AND p.session_id = %s AND p.entry_id = f.parent_id
        AND runs.first > %s AND p.seq < runs.first
)
SELECT up.entry_id, up.parent_id, up.type, {out}, up.seq FROM runs CROSS JOIN sessions_app_entry up {join}
WHERE up.session_id = %s AND up.seq BETWEEN runs.first AND runs.last
"""


_seq_of = operator.itemgetter(4)
_CONTEXT_RUNS = {vendor: _runs_sql(column, _SPAN_JOIN) for vendor, column in _MESSAGE_OR_LINE.items()}
_LINE_RUNS = {"sqlite": _runs_sql("CAST(raw AS BLOB)"), "postgresql": _runs_sql("raw")}


def _by_runs(sql: str, session: Session, leaf_id: str, start: _Start) -> list[tuple[Any, ...]] | None:
    """The path from start's stop (else the root) to the leaf, read by runs (_runs_sql); None if
    the run starts are missing or wrong for it. Trusted only if the rows link up, each the parent
    of the next, from the stop (or a root) to the leaf. Not tried where the indexer has yet to
    record them (a large import being indexed): a range would run on over entries off the path."""
    behind = session.indexed_seq is not None and session.indexed_seq < start.leaf_seq
    if behind or (start.stop and start.stop_seq is None):
        return None
    low = start.stop_seq if start.stop else 0
    pk, leaf = session.pk, start.leaf_seq
    with connection.cursor() as cursor:
        cursor.execute(sql, [low, low, pk, leaf, leaf, low, low, pk, pk, pk, low, pk])
        rows: list[tuple[Any, ...]] = cursor.fetchall()
    rows.sort(key=_seq_of)  # (each range ascending, the ranges leaf first: a few runs to merge)
    if len(rows) != start.leaf_depth - start.stop_depth + 1 or rows[-1][0] != leaf_id:
        return None
    if (rows[0][0] != start.stop) if start.stop else (rows[0][1] is not None):
        return None
    if [r[1] for r in rows[1:]] != [r[0] for r in rows[:-1]]:
        return None
    return rows


def branch_files(*, session: Session, leaf_id: str) -> list[FileChange]:
    """The files the path from the root to leaf_id changed (core/files_changed.py has the rules)."""
    return files_changed(path_nodes(session=session, leaf_id=leaf_id))


def session_context(*, session: Session, leaf_id: str | None = None) -> dict[str, Any]:
    """pi's buildSessionContext at leaf_id (default: the session's leaf), reading only the entries
    that can appear in it: from the last compaction's first kept entry down to the leaf."""
    return _session_context(session=session, leaf_id=leaf_id)


def session_context_json(*, session: Session, leaf_id: str | None = None) -> bytes:
    """session_context as JSON, each message entry's message copied from its stored line as it is
    (pi uses those unchanged); the other messages are built and encoded. Equal, once parsed, to
    session_context."""
    # In a savepoint on PostgreSQL: its json type refuses lone surrogates (which pi writes), and
    # the failed statement would otherwise end the caller's transaction.
    guard = transaction.atomic() if connection.vendor == "postgresql" else contextlib.nullcontext()
    try:
        with guard:
            return _context_json(session=session, leaf_id=leaf_id)
    except (TypeError, DataError, OperationalError):
        # TypeError: a built message holds an integer beyond 64 bits; OperationalError: a line
        # SQLite's JSON reader refuses (nested deeper than it goes, where the import's limit allows).
        # Built and written as JSON.stringify would: the rare lines orjson cannot take.
        return jsjson.dumps(_session_context(session=session, leaf_id=leaf_id)).encode()


# The leaf's resolved state and where its context starts (the last compaction's first kept entry,
# else the compaction itself), with the leaf's and that entry's places (seq, depth), in one
# statement: no ORM rows on this path.
_CONTEXT_START = """
SELECT l.ctx_thinking, l.ctx_model, COALESCE(c.kept_from_id, c.entry_id), l.seq, l.depth, k.seq, k.depth
FROM sessions_app_entry l
LEFT JOIN sessions_app_entry c ON c.session_id = l.session_id AND c.entry_id = l.ctx_compaction_id
LEFT JOIN sessions_app_entry k ON k.session_id = l.session_id AND k.entry_id = COALESCE(c.kept_from_id, c.entry_id)
WHERE l.session_id = %s AND l.entry_id = %s
"""


@dataclass(frozen=True, slots=True)
class _Start:
    thinking: Any
    model: dict[str, Any] | None
    stop: str | None  # the entry the context starts from; None: the root
    leaf_seq: int
    leaf_depth: int
    stop_seq: int | None
    stop_depth: int


def _context_start(session: Session, entry_id: str) -> _Start:
    with connection.cursor() as cursor:
        cursor.execute(_CONTEXT_START, [session.pk, entry_id])
        found = cursor.fetchone()
    if found is None:
        raise _not_found(entry_id)
    thinking, model, stop, leaf_seq, leaf_depth, stop_seq, stop_depth = found
    model = jsjson.loads(model) if model else None
    return _Start(jsjson.loads(thinking), model, stop, leaf_seq, leaf_depth, stop_seq, stop_depth or 0)


def context_start(*, session: Session, entry_id: str) -> tuple[Any, dict[str, Any] | None, str | None]:
    """At entry_id: (its thinking level, its model or None, the entry its context starts from:
    the last compaction's first kept entry, else the compaction; None: the root). EntryNotFound if
    the session has no such entry."""
    start = _context_start(session, entry_id)
    return start.thinking, start.model, start.stop


def _session_context(*, session: Session, leaf_id: str | None) -> dict[str, Any]:
    target = session.leaf_id if leaf_id is None else leaf_id
    if target is None:
        return {"leafId": None, "messages": [], "thinkingLevel": "off", "model": None}
    start = _context_start(session, target)
    rows = _by_runs(_LINE_RUNS[connection.vendor], session, target, start)
    path = path_nodes(session=session, leaf_id=target, stop_id=start.stop) if rows is None else _nodes(rows)
    return {"leafId": target, **ctx.context_from_path(path, thinking_level=start.thinking, model=start.model)}


def _context_json(*, session: Session, leaf_id: str | None) -> bytes:
    target = session.leaf_id if leaf_id is None else leaf_id
    if target is None:
        return orjson.dumps(_session_context(session=session, leaf_id=None))
    start = _context_start(session, target)
    rows = _context_rows(session=session, leaf_id=target, start=start)
    return ctx.context_json(rows, leaf_id=target, thinking_level=start.thinking, model=start.model)


def children(*, session: Session, entry_id: str | None) -> QuerySet[Entry]:
    """Children ordered by timestamp, equal times in file order; the roots (entry_id None) in file
    order. As pi's getTree(), which sorts children lists but leaves the roots as found."""
    query = Entry.objects.filter(session=session, parent_id=entry_id)
    return query.order_by("seq") if entry_id is None else query.order_by("ts_ms", "seq")


def label_lines(*, sessions: QuerySet[Session] | Iterable[int] | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(session pk, label entry) for the label entries of these sessions (None: of every session),
    read from the stored lines, each session's in file order."""
    rows = Entry.objects.filter(type="label")
    rows = rows.filter(session__in=Session.objects.filter(VISIBLE) if sessions is None else sessions)
    for session_pk, raw in rows.order_by("session_id", "seq").values_list("session_id", "raw").iterator(2000):
        yield session_pk, jsjson.loads(raw)


def label_texts(*, sessions: QuerySet[Session] | Iterable[int] | None) -> dict[str, set[int]]:
    """Every label text in force in these sessions (None: in every session), with the sessions
    (pks) where it is: pi's label replay per session, so a cleared label (a later label entry
    with an empty label) is gone. Read from the label entries themselves: a label's row preview
    is display text, cut at 200 characters."""
    texts: dict[str, set[int]] = {}
    for session_pk, group in itertools.groupby(label_lines(sessions=sessions), key=lambda line: line[0]):
        for data in labels_in_force(data for _, data in group).values():
            texts.setdefault(data["label"], set()).add(session_pk)
    return texts


def label_entries_in_force(*, session: Session, within: Container[str] | None = None) -> dict[str, Mapping[str, Any]]:
    """The label entry in force for each labelled entry (tree.labels_in_force): its "label", and
    when it was set ("timestamp", pi's labelTimestampsById). ``within``: only the label entries
    among these ids count, and only for entries among them (a share link's scope)."""
    lines = (data for _, data in label_lines(sessions=[session.pk]))
    if within is None:
        return labels_in_force(lines)
    found = labels_in_force(data for data in lines if data.get("id") in within)
    return {target: data for target, data in found.items() if target in within}


def labels(*, session: Session, within: Container[str] | None = None) -> dict[str, str]:
    """Resolved labels, last label entry wins (in file order, whatever the branch); ``within`` as
    for label_entries_in_force."""
    return {target: data["label"] for target, data in label_entries_in_force(session=session, within=within).items()}


def tree_flat(*, session: Session) -> dict[str, Any]:
    """The whole tree as a flat list in file order (a deep nesting could not be serialised)."""
    return orjson.loads(tree_json(session=session))  # type: ignore[no-any-return]


def tree_json(*, session: Session) -> bytes:
    """tree_flat as JSON, from tree_nodes' cached chunks."""
    return tree_nodes.tree_json(session=session, labels=labels(session=session))


EXPORT_BATCH = 1000  # entries per query of an export (keyset pages: memory bounded by this)


def entry_batches(
    *, session: Session, fields: Sequence[str], batch: int | None = None, upto: int | None = None
) -> Iterator[list[tuple[Any, ...]]]:
    """The session's entries in file order, ``fields`` of each (the first must be "seq"), a list
    of at most ``batch`` rows at a time: one short keyset query per batch (no cursor held open
    between them), up to seq ``upto`` (default: the last entry there is at the first call): a
    consistent prefix of an append-only session, whatever is appended meanwhile. batch:
    EXPORT_BATCH by default."""
    size = batch or EXPORT_BATCH
    last = upto if upto is not None else Session.objects.filter(pk=session.pk).values_list("last_seq", flat=True)[0]
    after = 0
    while after < last:
        rows = list(
            Entry.objects.filter(session=session, seq__gt=after, seq__lte=last)
            .order_by("seq")
            .values_list(*fields)[:size]
        )
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def export_lines(
    *,
    session: Session,
    batch: int | None = None,
    upto: int | None = None,
    mirror: bool = False,
    with_labels: bool = False,
) -> Iterator[str]:
    """The session as pi JSONL, one line (with its newline) at a time, read in batches: up to seq
    ``upto`` (entry_batches), so the file is whole whatever is appended while the lines go out.

    mirror: only the lines of the source file (Session.mirror_seqs), as the pusher's file holds
    them; with_labels then appends the labels made in piweb on those entries, as pi label entries
    at the end (each a child of the line before it, so pi's context is unchanged)."""
    yield session.header_raw + "\n"
    ranges = session.mirror_seqs if mirror and session.mirror_seqs is not None else None
    extra = sorted(((int(after), raw) for after, raw in session.extra_headers), key=lambda item: item[0])
    k = 0
    kept: set[str] = set()
    labels: list[dict[str, Any]] = []
    last_id: str | None = None
    for rows in entry_batches(session=session, fields=("seq", "raw", "entry_id", "type"), batch=batch, upto=upto):
        for seq, raw, entry_id, kind in rows:
            while k < len(extra) and extra[k][0] < seq:
                yield extra[k][1] + "\n"
                k += 1
            if ranges is not None and not any(first <= seq <= last for first, last in ranges):
                if with_labels and kind == "label":
                    labels.append(jsjson.loads(raw))
                continue
            kept.add(entry_id)
            last_id = entry_id
            yield raw + "\n"
    for _, raw in extra[k:]:
        yield raw + "\n"
    for label in labels:
        if label.get("targetId") in kept and label.get("id") not in kept:
            label["parentId"] = last_id
            last_id = label["id"]
            kept.add(label["id"])
            yield jsjson.dumps(label) + "\n"
