"""Reads for the tree explorer UI. Never scans a whole session: every page reads a bounded region.

The tree panel reads the viewed path upwards from its leaf (a bounded walk), the children of those
path entries (the alternatives at branch points, followed through entries the filter hides), and a
bounded part of the subtree below the leaf. Gaps and folded branches are read the same way when
opened. Each function issues a fixed number of queries whatever the session's size.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Coalesce, Lower, NullIf

from sessions_app.core import treeview as tv
from sessions_app.core.tree import TEXTLESS_PREFIX, labels_in_force
from sessions_app.errors import EntryNotFound
from sessions_app.models import Entry, Session
from sessions_app.store import reviews
from sessions_app.store import search as text_search
from sessions_app.store import selectors as sel
from sessions_app.store.batches import in_batches, select_in

T = "sessions_app_entry"
# pi's /tree hides assistant messages without text; their row text (tree.row_text) starts with
# TEXTLESS_PREFIX, which a reply with text never does.
assert "'" not in TEXTLESS_PREFIX and "%" not in TEXTLESS_PREFIX  # inlined as an SQL literal
_EMPTY = (
    f"CASE WHEN e.role = 'assistant' AND substr(e.preview, 1, {len(TEXTLESS_PREFIX)}) = '{TEXTLESS_PREFIX}'"
    " THEN 1 ELSE 0 END"
)
_COLS = f"e.entry_id, e.parent_id, e.ts_ms, e.type, e.role, {_EMPTY}, e.depth, e.preview"

WALK_LIMIT = {"default": 400, "no-tools": 400, "all": 300, "user-only": 1500, "labeled-only": 1500, "commented": 1500}
MAX_WALK = 20000
BELOW_LIMIT = 400
FULL_TREE = 2000  # sessions up to this many entries are drawn whole
CHUNK = 100  # rows drawn when a gap or a folded branch is opened
CONV_BEFORE = 40  # entries of the path drawn above the target in the conversation
CONV_AFTER = 40


def _row(r: Sequence[Any]) -> tv.Row:
    return tv.Row(
        id=r[0],
        parent_id=r[1],
        ts_ms=r[2],
        type=r[3],
        role=r[4],
        empty_assistant=bool(r[5]),
        depth=r[6],
        preview=r[7],
    )


def _scoped(rows: Iterable[tv.Row], scope: Container[str] | None) -> list[tv.Row]:
    """The rows a reader may see: all of them, or those in a share link's scope (share_scope: the
    path to an entry and its subtree, so an entry in scope has its ancestors in scope too)."""
    return list(rows) if scope is None else [r for r in rows if r.id in scope]


def _fetch(sql: str, params: Sequence[Any]) -> list[tv.Row]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_row(r) for r in cursor.fetchall()]


def walk_up(session: Session, start_id: str, limit: int) -> list[tv.Row]:
    """start_id and up to ``limit`` ancestors, nearest first (one query)."""
    sql = f"""
    WITH RECURSIVE up(entry_id, parent_id, n) AS (
        SELECT entry_id, parent_id, 0 FROM {T} WHERE session_id = %s AND entry_id = %s
        UNION ALL
        SELECT p.entry_id, p.parent_id, up.n + 1 FROM {T} p JOIN up ON p.session_id = %s AND p.entry_id = up.parent_id
        WHERE up.n < %s AND up.parent_id <> up.entry_id
    )
    SELECT {_COLS} FROM up JOIN {T} e ON e.session_id = %s AND e.entry_id = up.entry_id ORDER BY up.n"""
    return _fetch(sql, [session.pk, start_id, session.pk, limit, session.pk])


def subtree(session: Session, node_id: str, limit: int) -> tuple[list[tv.Row], set[str] | None]:
    """node_id and its descendants, breadth first, at most ``limit`` rows (one query).

    Returns the rows and the ids whose children were all read (None: all of them).
    """
    sql = f"""
    WITH RECURSIVE d(entry_id, n) AS (
        SELECT entry_id, 0 FROM {T} WHERE session_id = %s AND entry_id = %s
        UNION ALL
        SELECT c.entry_id, d.n + 1 FROM {T} c JOIN d ON c.session_id = %s AND c.parent_id = d.entry_id
        WHERE c.entry_id <> d.entry_id AND d.n < %s
    )
    SELECT {_COLS}, s.n FROM (SELECT entry_id, n FROM d LIMIT %s) s
    JOIN {T} e ON e.session_id = %s AND e.entry_id = s.entry_id"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk, node_id, session.pk, MAX_WALK, limit, session.pk])
        raw = cursor.fetchall()
    raw.sort(key=lambda r: r[-1])
    rows = [_row(r) for r in raw]
    if len(rows) < limit:
        return rows, None
    deepest = raw[-1][-1]
    return rows, {r[0] for r in raw if r[-1] < deepest - 1}


def _children(session: Session, parents: Sequence[str], roots: bool = False) -> list[tv.Row]:
    """The children of parents (and, with roots, the roots), each once."""
    cond = "e.parent_id IN ({marks})" + (" OR e.parent_id IS NULL" if roots else "")
    found = select_in(f"SELECT {_COLS} FROM {T} e WHERE e.session_id = %s AND ({cond})", [session.pk], parents)
    return list({row.id: row for row in map(_row, found)}.values())


def around(
    session: Session, path: Sequence[tv.Row], *, mode: str, labels: dict[str, str], roots: bool, rounds: int = 3
) -> list[tv.Row]:
    """Children of the path entries off the path, followed through hidden entries (bounded rounds)."""
    on_path = {r.id for r in path}
    found: dict[str, tv.Row] = {}
    parents = [r.id for r in path]
    for n in range(rounds):
        if not parents:
            break
        kids = [k for k in _children(session, parents, roots=roots and n == 0) if k.id not in on_path]
        new = [k for k in kids if k.id not in found]
        for k in new:
            found[k.id] = k
        parents = [k.id for k in new if not tv.is_visible(k, mode, labels)]
    return list(found.values())


def newest_leaf(session: Session, node_id: str) -> str:
    """The tip reached by following the newest child (by time, then file order) down from node_id:
    where pi's HTML export goes when a node is clicked (findNewestLeaf). One query.

    Label entries count, as in pi's tree: a label is appended at the leaf and becomes the leaf, so
    the session's own leaf is often one."""
    sql = f"""
    WITH RECURSIVE d(entry_id, n) AS (
        SELECT CAST(%s AS VARCHAR(200)), 0
        UNION ALL
        SELECT (SELECT c.entry_id FROM {T} c WHERE c.session_id = %s AND c.parent_id = d.entry_id
                AND c.entry_id <> d.entry_id ORDER BY c.ts_ms DESC, c.seq DESC LIMIT 1), d.n + 1
        FROM d WHERE d.entry_id IS NOT NULL AND d.n < %s
    )
    SELECT entry_id FROM d WHERE entry_id IS NOT NULL ORDER BY n DESC LIMIT 1"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [node_id, session.pk, 10 * MAX_WALK])
        row = cursor.fetchone()
    return str(row[0]) if row else node_id


def entry_row(session: Session, entry_id: str) -> tv.Row:
    rows = _fetch(f"SELECT {_COLS} FROM {T} e WHERE e.session_id = %s AND e.entry_id = %s", [session.pk, entry_id])
    if not rows:
        raise EntryNotFound(f"Entry {entry_id} not found", entryId=entry_id)
    return rows[0]


def last_entry_id(session: Session) -> str | None:
    return Entry.objects.filter(session=session).order_by("-seq").values_list("entry_id", flat=True).first()


# --- the session page --------------------------------------------------------------------------


@dataclass(slots=True)
class Place:
    """Where the page looks: the viewed leaf (its path is shown) and the focused entry on it, and
    the session's leaf as a reader sees it (reading_leaf). path_end: the entry the drawn path ends
    at, the leaf asked for: below the viewed leaf when that was reached through bookkeeping entries
    (a rename note still shows at the end of the conversation)."""

    leaf: tv.Row | None
    target: tv.Row | None
    session_leaf: str | None = None
    path_end: str | None = None


BOOKKEEPING_WALK = 64  # ancestors read to get past the bookkeeping entries above a leaf


def _reading_row(session: Session, entry_id: str) -> tv.Row:
    """The entry as a reader's leaf: itself, or past the bookkeeping entries above it
    (tv.reading_leaf). EntryNotFound if it does not exist. One query."""
    row = tv.reading_leaf(walk_up(session, entry_id, BOOKKEEPING_WALK))
    if row is None:
        raise EntryNotFound(f"Entry {entry_id} not found", entryId=entry_id)
    return row


def reading_leaf(session: Session) -> str | None:
    """The session's leaf as a reader sees it: pi moves the leaf onto every label and session_info
    entry, the UI reads through them to the nearest real entry (the "leaf" pill, following)."""
    return _reading_row(session, session.leaf_id).id if session.leaf_id is not None else None


def resolve_place(session: Session, *, leaf_id: str | None, target_id: str | None) -> Place:
    """?leaf= and ?target= (either may be missing; unknown ids are EntryNotFound). A leaf on a
    bookkeeping entry reads as its nearest real ancestor (_reading_row)."""
    if leaf_id is None and target_id is not None:
        leaf_id = newest_leaf(session, target_id)
    if leaf_id is None:
        leaf_id = session.leaf_id or last_entry_id(session)
    if leaf_id is None:
        return Place(None, None)
    leaf = _reading_row(session, leaf_id)
    target = entry_row(session, target_id) if target_id and target_id not in (leaf_id, leaf.id) else leaf
    session_leaf = leaf.id if leaf_id == session.leaf_id else reading_leaf(session)
    return Place(leaf, target, session_leaf, leaf_id)


@dataclass(slots=True)
class TreePanel:
    items: list[tv.Item]
    roots: list[tv.Branch]
    rows: dict[str, tv.Row]
    labels: dict[str, str]
    on_path: set[str]
    mode: str
    focus: str | None
    visible: int
    search: str = ""
    results: list[tv.Row] = field(default_factory=list)
    more_results: bool = False


@dataclass(slots=True)
class Page_:
    session: Session
    place: Place
    path: list[tv.Row]  # root-first, possibly only its lower part
    tree: TreePanel
    conversation: list[Entry]
    conv_more_above: bool
    conv_more_below: str | None  # entry to continue from (the last drawn), when the path goes on
    siblings: dict[str, tv.Siblings]
    labels: dict[str, str]


def filter_marks(session: Session, mode: str, labels: dict[str, str]) -> dict[str, str]:
    """The entries a marking filter keeps (tv.is_visible): the labelled ones, or for "commented"
    those with review threads. Share links never ask for "commented" (web/views.Reader.mode)."""
    if mode != "commented":
        return labels
    return dict.fromkeys(reviews.commented_entries(session=session), "")


def page(session: Session, *, place: Place, mode: str, search: str = "", scope: Container[str] | None = None) -> Page_:
    """Everything the session page draws; with a scope (a share link's), only entries in it."""
    labels = sel.labels(session=session, within=scope)
    path: list[tv.Row] = []
    tree = TreePanel([], [], {}, labels, set(), mode, None, 0, search)
    conv: list[Entry] = []
    more_above, more_below = False, None
    sibs: dict[str, tv.Siblings] = {}
    if place.leaf is not None and place.target is not None:
        gap = max(0, place.leaf.depth - place.target.depth) + BOOKKEEPING_WALK
        walk = min(MAX_WALK, gap + max(WALK_LIMIT.get(mode, 400), CONV_BEFORE + 1))
        path = list(reversed(walk_up(session, place.path_end or place.leaf.id, walk)))
        marks = filter_marks(session, mode, labels)
        tree = tree_panel(
            session, path=path, place=place, mode=mode, labels=labels, marks=marks, search=search, scope=scope
        )
        conv, more_above, more_below = _conversation(session, path, place.target.id)
        sibs = siblings_for(session, conv, scope)
    return Page_(session, place, path, tree, conv, more_above, more_below, sibs, labels)


def tree_panel(
    session: Session,
    *,
    path: list[tv.Row],
    place: Place,
    mode: str,
    labels: dict[str, str],
    marks: dict[str, str] | None = None,
    search: str = "",
    scope: Container[str] | None = None,
) -> TreePanel:
    assert place.leaf is not None and place.target is not None
    shown_by = labels if marks is None else marks  # what the filter keeps (filter_marks)
    if search.strip():
        return search_panel(session, search=search, mode=mode, labels=labels, marks=shown_by, place=place, path=path)
    keep = [place.session_leaf, place.target.id, place.leaf.id]
    if session.last_seq <= FULL_TREE:
        # Small enough to read whole (one query): every branch is drawn, nothing is lazy.
        sql = f"SELECT {_COLS} FROM {T} e WHERE e.session_id = %s ORDER BY e.seq"
        rows = {r.id: r for r in _scoped(_fetch(sql, [session.pk]), scope)}
        v = tv.view(tv.skeleton(rows.values()), mode=mode, labels=shown_by, leaf_id=place.leaf.id, keep=keep)
        w = tv.window(v, focus=place.target.id)
        return TreePanel(w.items, w.roots, rows, labels, v.on_path, mode, w.focus, v.visible, search)
    reached_root = bool(path) and path[0].parent_id is None
    near = _scoped(around(session, path, mode=mode, labels=shown_by, roots=reached_root), scope)
    below, explored = subtree(session, place.leaf.id, BELOW_LIMIT)
    below = _scoped(below, scope)
    rows = {r.id: r for r in [*path, *near, *below]}
    sk = tv.skeleton(rows.values())
    v = tv.view(sk, mode=mode, labels=shown_by, leaf_id=place.leaf.id, keep=keep, path=[r.id for r in path])
    known = set(rows) - {r.id for r in near} | {r.id for r in near if not tv.is_visible(r, mode, shown_by)}
    if explored is not None:
        known = (known - {r.id for r in below}) | explored
    else:
        known |= {r.id for r in below}
    w = tv.window(v, focus=place.target.id, truncated_top=not reached_root, explored=known)
    return TreePanel(w.items, w.roots, rows, labels, v.on_path, mode, w.focus, v.visible, search)


def search_panel(
    session: Session,
    *,
    search: str,
    mode: str,
    labels: dict[str, str],
    place: Place,
    path: list[tv.Row],
    marks: dict[str, str] | None = None,
) -> TreePanel:
    """Type-to-search: the entries whose label + row text contain every word, in file order."""
    words = tv.search_words(search)
    query = Entry.objects.filter(session=session)
    cond = Q()
    for w in words:
        cond &= Q(preview__icontains=w)
    label_hits = [i for i, text in labels.items() if tv.matches(text, words)]
    if label_hits:
        cond |= Q(entry_id__in=label_hits)
    cols = ("entry_id", "parent_id", "ts_ms", "type", "role", "depth", "preview")
    found = list(query.filter(cond).order_by("seq").values_list(*cols)[:400])
    results = []
    for entry_id, parent_id, ts_ms, kind, role, depth, preview in found:
        row = tv.Row(entry_id, parent_id, ts_ms, kind, role, _empty(role, preview), depth, preview)
        if tv.is_visible(row, mode, labels if marks is None else marks) or entry_id == place.session_leaf:
            results.append(row)
    on_path = {r.id for r in path}
    panel = TreePanel([], [], {r.id: r for r in results}, labels, on_path, mode, None, len(results), search)
    panel.results = results[:200]
    panel.more_results = len(results) > 200
    return panel


def _empty(role: str | None, preview: str) -> bool:
    return role == "assistant" and preview.startswith(TEXTLESS_PREFIX)


def gap_panel(
    session: Session,
    *,
    node_id: str,
    up: bool,
    depth: int,
    mode: str,
    leaf_id: str | None,
    current: str | None,
    scope: Container[str] | None = None,
) -> tuple[list[tv.Item], dict[str, tv.Row], set[str]]:
    """Rows for an opened gap: the CHUNK entries above node_id (on the viewed path) or below it;
    with a scope, only those in it. current: the session's leaf as read (reading_leaf)."""
    labels = filter_marks(session, mode, sel.labels(session=session, within=scope))
    keep = [current, leaf_id]
    if up:
        chain = list(reversed(walk_up(session, node_id, CHUNK * (3 if mode in ("default", "no-tools") else 10))))
        reached_root = bool(chain) and chain[0].parent_id is None
        near = _scoped(around(session, chain[:-1], mode=mode, labels=labels, roots=reached_root), scope)
        rows = {r.id: r for r in [*chain, *near]}
        v = tv.view(tv.skeleton(rows.values()), mode=mode, labels=labels, keep=keep, path=[r.id for r in chain])
        known = {r.id for r in chain} | {r.id for r in near if not tv.is_visible(r, mode, labels)}
        start = tv.main_lane_start(v)
        items = (
            tv.chunk_items(
                v,
                start,
                skip_first=False,
                skip_last=True,
                depth=depth,
                from_end=True,
                chunk=CHUNK,
                truncated_top=not reached_root,
                explored=known,
            )
            if start
            else []
        )
        return items, rows, v.on_path
    below, explored = subtree(session, node_id, CHUNK * 4)
    rows = {r.id: r for r in _scoped(below, scope)}
    v = tv.view(tv.skeleton(rows.values()), mode=mode, labels=labels, keep=[*keep, node_id], path=[])
    items = tv.chunk_items(v, node_id, skip_first=True, skip_last=False, depth=depth, chunk=CHUNK, explored=explored)
    return items, rows, set()


def branch_panel(
    session: Session,
    *,
    node_id: str,
    depth: int,
    mode: str,
    current: str | None,
    scope: Container[str] | None = None,
) -> tuple[list[tv.Item], dict[str, tv.Row]]:
    """A folded alternative opened: its lane's first CHUNK rows, further alternatives folded; with a
    scope, only those in it. current: the session's leaf as read (reading_leaf)."""
    labels = filter_marks(session, mode, sel.labels(session=session, within=scope))
    below, explored = subtree(session, node_id, CHUNK * 4)
    rows = {r.id: r for r in _scoped(below, scope)}
    v = tv.view(tv.skeleton(rows.values()), mode=mode, labels=labels, keep=[current, node_id], path=[])
    start = tv.anchor_of(v, node_id) or node_id
    items = tv.chunk_items(v, start, skip_first=False, skip_last=False, depth=depth, chunk=CHUNK, explored=explored)
    return items, rows


# --- conversation --------------------------------------------------------------------------------


def _conversation(session: Session, path: list[tv.Row], target_id: str) -> tuple[list[Entry], bool, str | None]:
    ids = [r.id for r in path]
    t = ids.index(target_id) if target_id in ids else len(ids) - 1
    lo, hi = max(0, t - CONV_BEFORE), min(len(ids), t + CONV_AFTER + 1)
    window = ids[lo:hi]
    entries = entries_by_id(session, window)
    conv = [entries[i] for i in window if i in entries]
    more_above = lo > 0 or bool(path and path[0].parent_id is not None)
    more_below = ids[hi - 1] if hi < len(ids) else None
    return conv, more_above, more_below


def entries_by_id(session: Session, ids: Iterable[str]) -> dict[str, Entry]:
    rows = Entry.objects.filter(session=session).order_by()
    rows = rows.only("entry_id", "parent_id", "type", "role", "raw", "ts_ms", "depth", "seq")
    return {e.entry_id: e for e in in_batches(ids, lambda part: rows.filter(entry_id__in=part))}


def earlier_entries(session: Session, before_id: str, count: int = CONV_BEFORE) -> tuple[list[Entry], bool]:
    """The ``count`` path entries above before_id (root-first) and whether more are above them."""
    chain = list(reversed(walk_up(session, before_id, count)))[:-1]
    entries = entries_by_id(session, [r.id for r in chain])
    more = bool(chain) and chain[0].parent_id is not None
    return [entries[r.id] for r in chain if r.id in entries], more


def _children_of(parents: Sequence[str | None]) -> Q:
    """Entries whose parent is one of parents (None in parents: the roots)."""
    ids = [p for p in parents if p is not None]
    cond = Q(parent_id__in=ids)
    return cond | Q(parent_id=None) if len(ids) < len(parents) else cond


def _real_parents(conv: Sequence[Entry]) -> dict[str, str | None]:
    """Each drawn entry's nearest ancestor that is not bookkeeping (tv.BOOKKEEPING), read off the
    drawn path: conv is a run of one path, root-first. Above the run's first entry, its parent."""
    out: dict[str, str | None] = {}
    above: str | None = conv[0].parent_id if conv else None
    for e in conv:
        out[e.entry_id] = above
        if e.type not in tv.BOOKKEEPING:
            above = e.entry_id
    return out


def siblings_for(
    session: Session, conv: Sequence[Entry], scope: Container[str] | None = None
) -> dict[str, tv.Siblings]:
    """For each drawn entry whose parent branches (or that is one of several roots): its place
    among the alternatives (tv.siblings) in the scope, if one is given. Bookkeeping entries are
    looked through (tv.sibling_group): a branch that starts with a label is still an alternative."""
    real_parent = _real_parents(conv)
    rows = Entry.objects.filter(session=session).order_by().values_list("parent_id", "ts_ms", "seq", "entry_id", "type")
    kids: dict[str | None, list[tv.Kid]] = {}
    parents: list[str | None] = list(dict.fromkeys(real_parent.values()))
    asked: set[str | None] = set()
    for _ in range(tv.LOOK_THROUGH + 1):  # one query per level of bookkeeping looked through
        if not parents:
            break
        asked.update(parents)
        more: list[str | None] = []
        for parent_id, ts_ms, seq, entry_id, kind in in_batches(parents, lambda part: rows.filter(_children_of(part))):
            if scope is not None and entry_id not in scope:
                continue
            key = tv.sibling_key(parent_id=parent_id, ts_ms=ts_ms, seq=seq)
            kids.setdefault(parent_id, []).append((key, entry_id, kind))
            if kind in tv.BOOKKEEPING and entry_id not in asked:
                more.append(entry_id)
        parents = list(dict.fromkeys(more))
    groups: dict[str | None, list[str]] = {}
    out: dict[str, tv.Siblings] = {}
    for e in conv:
        if e.type in tv.BOOKKEEPING:
            continue
        parent = real_parent[e.entry_id]
        if parent not in groups:
            groups[parent] = tv.sibling_group(kids, parent)
        place = tv.siblings(groups[parent], e.entry_id)
        if place is not None:
            out[e.entry_id] = place
    return out


# --- session list ------------------------------------------------------------------------------

# "name" is the name the list shows: the session_info name, else the first message (case folded).
SHOWN_NAME = Lower(Coalesce(NullIf("name", Value("")), "first_message"))
SORTS: dict[str, tuple[str | Lower, ...]] = {
    "modified": ("-modified_ms", "-id"),
    "created": ("-created", "-id"),
    "name": (SHOWN_NAME, "id"),
    "messages": ("-message_count", "-id"),
    "cost": ("-cost", "-id"),
}


def session_list(
    *, user: User | AnonymousUser, search: str = "", label: str = "", sort: str = "modified"
) -> QuerySet[Session]:
    sessions = sel.session_list_for_user(user=user)
    if search.strip():
        # The search across sessions (store/search.py) is the one matching rule.
        sessions = sessions.filter(pk__in=text_search.matching_sessions(user=user, q=search))
    if label:
        sessions = sessions.filter(pk__in=sel.label_texts(sessions=sessions).get(label, set()))
    return sessions.order_by(*SORTS.get(sort, SORTS["modified"]))


def labels_by_session(sessions: Sequence[Session]) -> dict[int, list[str]]:
    """Resolved labels of each session (distinct texts, sorted), in one query."""
    lines = sel.label_lines(sessions=[s.pk for s in sessions])
    out: dict[int, list[str]] = {s.pk: [] for s in sessions}
    for session_pk, group in itertools.groupby(lines, key=lambda line: line[0]):
        out[session_pk] = sorted({data["label"] for data in labels_in_force(data for _, data in group).values()})
    return out


def all_labels(*, user: User | AnonymousUser) -> list[str]:
    """Every label text the user has ever set (for the list's label filter)."""
    return sorted(sel.label_texts(sessions=sel.session_list_for_user(user=user)))


def paginate(sessions: QuerySet[Session], page_number: str | int | None, per_page: int = 25) -> Page[Session]:
    return Paginator(sessions, per_page).get_page(page_number)
