"""The tree explorer's model, pure (no Django): filters, search, lanes, segments, windows, siblings.

Input is a *skeleton*: one small row per entry (id, parent, time, type, role). Everything the tree
panel draws is computed from it, so a view never needs the entries' JSON.

Layout ("lanes"): a lane starts at a node and follows the first visible child down to a tip. At a
branch point the child leading to the viewed leaf comes first (pi's /tree rule), the others are
*alternatives*, drawn as indented, folded sub-lanes right under the branch point. A *segment* is a
run of a lane between branch points (pi folds single-child runs into one segment). Long lanes are
drawn as a window around the focused node with *gaps* ("⋯ 1,234 more entries") fetched on demand, so
a 100k-entry session costs as much to draw as a small one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

FILTERS = ("default", "no-tools", "user-only", "labeled-only", "commented", "all")
FILTER_LABELS = {
    "default": "Default",
    "no-tools": "No tools",
    "user-only": "User only",
    "labeled-only": "Labelled",
    "commented": "Commented",
    "all": "All",
}
# Entry types pi's default /tree filter hides.
DEFAULT_HIDDEN = frozenset({"label", "custom", "model_change", "thinking_level_change"})


@dataclass(frozen=True, slots=True)
class Row:
    """One entry, as much as the tree needs."""

    id: str
    parent_id: str | None
    ts_ms: int
    type: str
    role: str | None = None
    empty_assistant: bool = False  # an assistant message with no text (pi hides these in /tree)
    depth: int = 0  # entries above it (0 for a root)
    preview: str = ""  # the one-line row text


@dataclass(slots=True)
class Skeleton:
    rows: dict[str, Row]  # file order
    seq: dict[str, int]  # position in the file
    parent: dict[str, str | None]  # None for roots (null parent, self parent or missing parent)
    kids: dict[str | None, list[str]]  # raw children sorted by time, equal times in file order
    size: dict[str, int]  # entries in the subtree, the node included


def skeleton(rows: Iterable[Row]) -> Skeleton:
    by_id: dict[str, Row] = {}
    for row in rows:
        by_id[row.id] = row
    seq = {rid: i for i, rid in enumerate(by_id)}
    parent: dict[str, str | None] = {}
    kids: dict[str | None, list[str]] = {}
    for rid, row in by_id.items():
        p = row.parent_id
        if p is None or p == rid or p not in by_id:
            p = None
        parent[rid] = p
        kids.setdefault(p, []).append(rid)
    for p, ids in kids.items():
        if p is not None and len(ids) > 1:
            ids.sort(key=lambda i: (by_id[i].ts_ms, seq[i]))  # roots stay in file order (pi's getTree)
    size: dict[str, int] = {}
    for rid in reversed(_topological(kids)):
        size[rid] = 1 + sum(size[k] for k in kids.get(rid, ()))
    return Skeleton(rows=by_id, seq=seq, parent=parent, kids=kids, size=size)


def _topological(kids: Mapping[str | None, list[str]]) -> list[str]:
    """Every node reachable from the roots, parents before children (iterative, any depth)."""
    order: list[str] = []
    stack = list(reversed(kids.get(None, [])))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(kids.get(node, [])))
    return order


def path_to(sk: Skeleton, node_id: str | None) -> list[str]:
    """Root-first ids from the root down to node_id ([] if unknown)."""
    path: list[str] = []
    node = node_id if node_id in sk.rows else None
    while node is not None:
        path.append(node)
        node = sk.parent[node]
    path.reverse()
    return path


def is_visible(row: Row, mode: str, labels: Mapping[str, str]) -> bool:
    """pi's /tree filters (tree-selector.ts), for a node that is not the current leaf, and piweb's
    "commented". labels: the entries the marking filters keep (labelled; for "commented", those
    with review threads: store/explorer.filter_marks)."""
    if row.empty_assistant:
        return False
    if mode == "all":
        return True
    if mode == "user-only":
        return row.type == "message" and row.role == "user"
    if mode in ("labeled-only", "commented"):
        return row.id in labels
    if row.type in DEFAULT_HIDDEN:
        return False
    return not (mode == "no-tools" and row.role == "toolResult")


def search_words(query: str) -> list[str]:
    return query.lower().split()


def matches(text: str, words: Sequence[str]) -> bool:
    low = text.lower()
    return all(w in low for w in words)


@dataclass(slots=True)
class View:
    """The visible tree for one filter/search and one viewed leaf."""

    sk: Skeleton
    vkids: dict[str | None, list[str]]  # visible children, the one towards the viewed leaf first
    vparent: dict[str, str | None]
    on_path: set[str]  # the viewed path (root .. viewed leaf), raw ids
    visible: int


def view(
    sk: Skeleton,
    *,
    mode: str = "default",
    labels: Mapping[str, str] | None = None,
    leaf_id: str | None = None,
    keep: Iterable[str | None] = (),
    only: set[str] | None = None,
    path: Iterable[str] | None = None,
) -> View:
    """Visible nodes re-attached to their nearest visible ancestor (pi's rule).

    ``keep`` are always shown (the current leaf); ``only`` restricts to a set (search matches).
    """
    labels = labels or {}
    keep_set = {k for k in keep if k is not None}
    anchor: dict[str, str | None] = {}  # nearest visible ancestor-or-self
    vparent: dict[str, str | None] = {}
    vkids: dict[str | None, list[str]] = {}
    for rid in _topological(sk.kids):
        row = sk.rows[rid]
        up = sk.parent[rid]
        above = anchor[up] if up is not None else None
        shown = rid in keep_set or (is_visible(row, mode, labels) and (only is None or rid in only))
        if shown:
            anchor[rid] = rid
            vparent[rid] = above
            vkids.setdefault(above, []).append(rid)
        else:
            anchor[rid] = above
    seq = sk.seq
    rows = sk.rows
    for p, ids in vkids.items():
        if len(ids) > 1 and p is not None:
            ids.sort(key=lambda i: (rows[i].ts_ms, seq[i]))
    on_path = set(path_to(sk, leaf_id)) if path is None else set(path)
    for p, ids in vkids.items():
        if len(ids) > 1 and (p is None or p in on_path):
            towards = [i for i in ids if i in on_path]
            if towards and ids[0] != towards[0]:
                ids.remove(towards[0])
                ids.insert(0, towards[0])
    return View(sk=sk, vkids=vkids, vparent=vparent, on_path=on_path, visible=len(vparent))


def anchor_of(v: View, node_id: str | None) -> str | None:
    """The node itself if visible, else its nearest visible ancestor."""
    node = node_id if node_id in v.sk.rows else None
    while node is not None and node not in v.vparent:
        node = v.sk.parent[node]
    return node


def lane(v: View, start: str) -> list[str]:
    """start, then its first visible child, and so on down to a tip."""
    out = [start]
    node = start
    while v.vkids.get(node):
        node = v.vkids[node][0]
        out.append(node)
    return out


@dataclass(slots=True)
class Branch:
    """An alternative at a branch point: a sub-lane, folded (items None) or drawn."""

    id: str
    size: int | None  # entries in its subtree (all types); None when only part of the tree was read
    items: list[Item] | None = None


@dataclass(slots=True)
class TreeRow:
    id: str
    pos: int  # index in its lane
    seg: str  # the segment's first node
    head: bool  # first row of its segment
    seg_len: int  # rows in the segment (meaningful on heads)
    depth: int  # nesting level of the lane (0 = main lane)
    alts: list[Branch] = field(default_factory=list)
    kids: int = 0  # visible children


@dataclass(slots=True)
class Gap:
    """Part of a lane not drawn yet: above ``node`` (up) or below it (down)."""

    node: str  # the nearest drawn row
    count: int | None  # entries it stands for, when known
    seg: str
    depth: int
    up: bool


Item = TreeRow | Gap


def segment_heads(v: View, ids: Sequence[str]) -> list[str]:
    """For each lane position, the first node of its segment."""
    heads: list[str] = []
    current = ids[0] if ids else ""
    for i, node in enumerate(ids):
        if i > 0 and len(v.vkids.get(ids[i - 1], ())) > 1:
            current = node
        heads.append(current)
    return heads


def _lane_items(
    v: View,
    start: str,
    *,
    lo: int,
    hi: int,
    depth: int,
    ids: Sequence[str] | None,
    budget: list[int],
    gap_up: bool,
    gap_down: bool,
    explored: set[str] | None = None,
) -> list[Item]:
    ids = lane(v, start) if ids is None else ids
    lo, hi = max(0, lo), min(len(ids), hi)
    if lo >= hi:
        return []
    heads = segment_heads(v, ids)
    if heads[lo] != ids[lo]:
        # The window starts inside a segment: its drawn part folds from the first drawn row.
        cut, pos = heads[lo], lo
        while pos < len(ids) and heads[pos] == cut:
            heads[pos] = ids[lo]
            pos += 1
    seg_len: dict[str, int] = {}
    for h in heads:
        seg_len[h] = seg_len.get(h, 0) + 1
    items: list[Item] = []
    if gap_up:
        items.append(Gap(node=ids[lo], count=v.sk.rows[ids[lo]].depth, seg=heads[lo], depth=depth, up=True))
    for pos in range(lo, hi):
        node = ids[pos]
        kids = v.vkids.get(node, [])
        row = TreeRow(
            id=node,
            pos=pos,
            seg=heads[pos],
            head=heads[pos] == node,
            seg_len=seg_len[heads[pos]],
            depth=depth,
            kids=len(kids),
        )
        row.alts = [_branch(v, alt, depth + 1, budget, explored) for alt in kids[1:]]
        items.append(row)
    last = ids[hi - 1]
    if gap_down and (hi < len(ids) or (explored is not None and last not in explored)):
        count = len(ids) - hi if hi < len(ids) and (explored is None or ids[-1] in explored) else None
        items.append(Gap(node=last, count=count, seg=heads[hi - 1], depth=depth, up=False))
    return items


def _branch(v: View, node: str, depth: int, budget: list[int], explored: set[str] | None) -> Branch:
    """An alternative, drawn in full if it fits in the budget (and is not nested too deep)."""
    branch = Branch(id=node, size=v.sk.size[node] if explored is None else None)
    if budget[0] <= 0 or depth > 12 or (explored is not None and node not in explored):
        return branch
    ids = lane(v, node)
    if len(ids) > budget[0]:
        return branch
    budget[0] -= len(ids)
    branch.items = _lane_items(
        v, node, lo=0, hi=len(ids), depth=depth, ids=ids, budget=budget, gap_up=False, gap_down=True, explored=explored
    )
    return branch


def main_lane_start(v: View) -> str | None:
    roots = v.vkids.get(None, [])
    return roots[0] if roots else None


@dataclass(slots=True)
class Window:
    start: str | None
    items: list[Item]
    roots: list[Branch]  # other roots (pi draws several roots under an invisible branching root)
    focus: str | None


def window(
    v: View,
    *,
    focus: str | None,
    before: int = 120,
    after: int = 60,
    expand_budget: int = 400,
    truncated_top: bool = False,
    explored: set[str] | None = None,
) -> Window:
    """The main lane around ``focus`` (its visible anchor), alternatives drawn while the budget lasts.

    ``truncated_top``: the lane's first node is not a real root (entries above were not read).
    ``explored``: the nodes whose children were read (None: all of them).
    """
    start = main_lane_start(v)
    if start is None:
        return Window(start=None, items=[], roots=[], focus=None)
    ids = lane(v, start)
    anchor = anchor_of(v, focus)
    f = ids.index(anchor) if anchor is not None and anchor in ids else len(ids) - 1
    budget = [expand_budget if v.visible <= expand_budget and not truncated_top else 0]
    lo = max(0, f - before)
    items = _lane_items(
        v,
        start,
        lo=lo,
        hi=f + after + 1,
        depth=0,
        ids=ids,
        budget=budget,
        gap_up=lo > 0 or truncated_top,
        gap_down=True,
        explored=explored,
    )
    roots = [_branch(v, r, 1, budget, explored) for r in v.vkids.get(None, [])[1:]]
    return Window(start=start, items=items, roots=roots, focus=anchor)


def chunk_items(
    v: View,
    start: str,
    *,
    skip_first: bool,
    skip_last: bool,
    depth: int,
    chunk: int = 200,
    from_end: bool = False,
    truncated_top: bool = False,
    explored: set[str] | None = None,
) -> list[Item]:
    """Rows of a lane read for a gap or a folded branch: ``chunk`` rows, a further gap if more."""
    ids = lane(v, start)
    first = 1 if skip_first else 0
    hi = len(ids) - 1 if skip_last else len(ids)
    lo = max(first, hi - chunk) if from_end else first
    if not from_end:
        hi = min(hi, lo + chunk)
    if lo >= hi:
        return []
    return _lane_items(
        v,
        start,
        lo=lo,
        hi=hi,
        depth=depth,
        ids=ids,
        budget=[0],
        explored=explored,
        gap_up=from_end and (lo > first or truncated_top),
        gap_down=not from_end,
    )


def item_ids(items: Iterable[Item]) -> list[str]:
    """Every row id in items, nested alternatives included (to fetch their previews in one query)."""
    out: list[str] = []
    stack = list(items)
    while stack:
        item = stack.pop()
        if isinstance(item, TreeRow):
            out.append(item.id)
            for alt in item.alts:
                out.append(alt.id)
                stack.extend(alt.items or [])
    return out


@dataclass(frozen=True, slots=True)
class Siblings:
    index: int  # 1-based
    count: int
    prev: str | None
    next: str | None


# Bookkeeping entries: a label, the session's name. pi appends each at the leaf and moves the leaf
# onto it, so they hang off whatever was being read; a reader reads through them (reading_leaf), and
# they are never an alternative to switch to (the sibling switcher looks through them too).
BOOKKEEPING = frozenset({"label", "session_info"})
LOOK_THROUGH = 8  # bookkeeping entries in a row that the sibling switcher looks through


def sibling_key(*, parent_id: str | None, ts_ms: int, seq: int) -> tuple[int, int]:
    """Sort key among siblings, as pi's getTree orders children: by time, equal times in file
    order; the roots (parent None) stay in file order."""
    return (0, seq) if parent_id is None else (ts_ms, seq)


Kid = tuple[tuple[int, int], str, str]  # (sibling_key, id, type)


def sibling_group(kids: Mapping[str | None, Sequence[Kid]], parent: str | None) -> list[str]:
    """parent's children (or the roots, parent None) in sibling_key order, each bookkeeping child
    replaced by its own children, looked through in turn (LOOK_THROUGH deep): the alternatives a
    reader can switch between."""
    found: list[tuple[list[tuple[int, int]], str]] = []  # (keys from parent down, id)
    stack: list[tuple[str | None, list[tuple[int, int]]]] = [(parent, [])]
    while stack:
        node, above = stack.pop()
        for key, kid, kind in kids.get(node, ()):
            if kind not in BOOKKEEPING:
                found.append(([*above, key], kid))
            elif len(above) < LOOK_THROUGH:
                stack.append((kid, [*above, key]))
    return [kid for _, kid in sorted(found)]


def siblings(group: Sequence[str], node_id: str) -> Siblings | None:
    """Where node_id sits among group (its parent's children, or the roots, in sibling_key order,
    looking through BOOKKEEPING), for a "2/3" switcher; None when there is nothing to switch to."""
    if len(group) < 2 or node_id not in group:
        return None
    i = group.index(node_id)
    return Siblings(
        index=i + 1,
        count=len(group),
        prev=group[i - 1] if i > 0 else None,
        next=group[i + 1] if i + 1 < len(group) else None,
    )


class EntryLike(Protocol):
    """What continue_target reads of an entry (a tree.Node or a treeview.Row)."""

    @property
    def id(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def type(self) -> str: ...
    @property
    def role(self) -> str | None: ...


def continue_target(entry: EntryLike) -> tuple[str | None, bool]:
    """pi's navigateTree leaf rule, for "continue from here", forking and /tree navigation: a user or
    custom message moves the leaf to its parent and its text goes to the editor (tree.editor_text);
    any other entry becomes the leaf. Returns (new leaf, whether the text goes to the editor)."""
    if (entry.type == "message" and entry.role == "user") or entry.type == "custom_message":
        return entry.parent_id, True
    return entry.id, False


_R = TypeVar("_R", bound=EntryLike)


def reading_leaf(up: Sequence[_R]) -> _R | None:
    """The leaf as a reader sees it: of ``up`` (a leaf and its ancestors, nearest first), the first
    entry that is not bookkeeping; the leaf itself when all of them are (None for no entries)."""
    for row in up:
        if row.type not in BOOKKEEPING:
            return row
    return up[0] if up else None
