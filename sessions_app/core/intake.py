"""New entries placed in a session's tree: the one rule set for imports, appends and forks. Pure.

Intake takes the valid entry lines of a file (piformat.read_entries) or of an append, in file order,
and places each one: its seq, its depth, the path state it leaves (model, thinking level, last
compaction: context.advance) and, for a compaction, whether its first kept entry is on its path.
It also judges the tree, as pi's loader needs it and pi itself does not check: repeated ids,
entries that differ from the stored ones, parents and label targets that do not exist, cycles.

pi writes parents before their children, so an entry is placed as soon as it is read, and the
caller can store it at once. From the first entry whose parent (or label target) has not been
seen, everything after it is held and placed at finish(): then seqs still follow the file's
order (an export gives the same bytes back), and parents are placed before their children.

Entries already stored (a re-import, an append) are known through a StoredTree.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from sessions_app.core.context import PathState, advance_entry
from sessions_app.core.listing import Listed, Listing, update_listing
from sessions_app.core.piformat import (
    Extra,
    FileRefused,
    Header,
    Item,
    Limits,
    Line,
    Problem,
    read_entries,
    read_header,
    slim,
)
from sessions_app.core.tree import check_acyclic


class Known(NamedTuple):
    """What placing a child needs of its parent. (Named tuples: one is made per entry placed.)"""

    parent_id: str | None
    depth: int
    state: PathState


class StoredTree(Protocol):
    """The entries of the session stored before this intake."""

    def __contains__(self, entry_id: object) -> bool: ...

    def known(self, ids: Collection[str]) -> dict[str, Known]:
        """Those of these ids that are stored, with their place."""
        ...

    def same_line(self, entry_id: str, line: bytes) -> bool:
        """True if the stored entry's line is exactly these UTF-8 bytes."""
        ...

    def is_ancestor(self, start_id: str, target_id: str, target_depth: int) -> bool:
        """True if target_id (at target_depth) is start_id or one of its stored ancestors."""
        ...


class Placed(NamedTuple):
    """An entry's place in the tree: what storing it needs beside its line."""

    line: Line
    seq: int
    depth: int
    state: PathState
    kept_from: str | None  # a compaction's firstKeptEntryId when that entry is on its path


class Seen(NamedTuple):
    """An entry this intake has taken: its place (Known's fields; depth HELD until it is placed)
    and where its first line is, should the id come again. A line of the file is not kept: source
    None, start and end its offsets in the file (read again then). One tuple per entry, in one
    table: a large import keeps 100k of them."""

    parent_id: str | None
    depth: int
    state: PathState
    number: int
    source: bytes | None
    start: int
    end: int


_ROOT = PathState()
HELD = -1  # the depth of an entry held for finish()
_new = tuple.__new__
MAX_PROBLEMS = 1000  # problems kept (those of the first lines); the others are only counted


@dataclass(slots=True)
class Intake:
    first_seq: int = 1  # the seq of the first entry placed
    stored: StoredTree | None = None
    listing: Listed = field(default_factory=Listing)  # updated with each entry, in seq order (a Session too)
    placed: int = 0
    known: int = 0  # lines identical to a stored entry (a re-import)
    problems: list[Problem] = field(default_factory=list)
    more_problems: int = 0  # problems past MAX_PROBLEMS, not kept
    extra_lines: list[tuple[int, str]] = field(default_factory=list)  # (seq of the entry before, line)
    max_extra_bytes: int | None = None  # the most extra_lines may hold; past it: FileRefused
    max_entries: int | None = None  # the most new entries a file may hold; past it: FileRefused
    extra_bytes: int = 0
    reread: Callable[[int, int], bytes] | None = None  # the file's bytes at [start:end]
    leaf_id: str | None = None  # pi's leaf on load: the last entry line, once finish() has run
    _entries: dict[str, Seen] = field(default_factory=dict)  # every entry of this intake
    _held: list[Line | Extra] | None = None  # from the first entry that could not be placed on
    _tail: list[str] = field(default_factory=list)  # ids by line, from the first held one (for the leaf)

    def add(self, item: Item) -> Placed | None:
        """Take the next line of the file; returns its entry if it is placed now."""
        if type(item) is not Line:
            if isinstance(item, Problem):
                self._problem(item)
                return None
            self._extra(item)  # type: ignore[arg-type]  # (not a Line, not a Problem: an Extra)
            if self._held is not None:
                self._held.append(item)
            else:
                self.extra_lines.append((self.first_seq + self.placed - 1, item.raw))
            return None
        number, source, start, end, data, _, _, offset = item
        entry_id = data["id"]
        entries = self._entries
        if entry_id in entries:
            self._repeated(item, entries[entry_id])
            return None
        if self.stored is not None and entry_id in self.stored:
            if not self.stored.same_line(entry_id, source[start:end]):
                message = f"entry {entry_id!r} differs from the stored entry with that id"
                self._problem(Problem(number, message))
            else:
                self.known += 1
                self._last(entry_id)
            return None
        if self.max_entries is not None and len(entries) >= self.max_entries:
            message = f"the file holds more than {self.max_entries} entries, the limit"
            raise FileRefused(Problem(number, message, True))
        # Where the line is, kept as Seen's source, start and end.
        if offset < 0:
            kept, at, to = source, start, end
        else:
            kept, at, to = None, offset, offset + end - start
        parent = data["parentId"]
        if self._held is None:
            # Placed now if its parent (and a label's target) is: the file's usual order. (Nothing
            # is held yet, so every entry of this intake is placed.)
            base = None if parent is None else entries.get(parent) or self._stored_place(parent)
            kind = data["type"]
            if (parent is None or base is not None) and (kind != "label" or self._is_placed(data.get("targetId"))):
                if base is None:
                    state, depth = advance_entry(_ROOT, kind, entry_id, data), 0
                else:
                    state, depth = advance_entry(base.state, kind, entry_id, data), base.depth + 1
                # (tuple.__new__: a named tuple's own __new__ is a Python call, and this runs per entry)
                entries[entry_id] = _new(Seen, (parent, depth, state, number, kept, at, to))
                kept_from = self._kept_from(data, depth) if kind == "compaction" else None
                update_listing(self.listing, data)
                self.placed += 1
                self.leaf_id = entry_id
                return _new(Placed, (item, self.first_seq + self.placed - 1, depth, state, kept_from))
            self._held = []
        entries[entry_id] = _new(Seen, (parent, HELD, _ROOT, number, kept, at, to))
        # Held with the bulky content left out; a line of the file without its block either (read
        # again when stored: by its offset).
        self._held.append(
            Line(number, b"" if offset >= 0 else source, start, end, slim(data), item.preview, item.ts_ms, offset)
        )
        self._tail.append(entry_id)
        return None

    def finish(self) -> list[Placed]:
        """Place what was held, judge the tree, find the leaf. Problems come out in line order."""
        placed = self._place_held() if self._held is not None else []
        self._trim(MAX_PROBLEMS)
        return placed

    def _problem(self, problem: Problem) -> None:
        self.problems.append(problem)
        if len(self.problems) >= 2 * MAX_PROBLEMS:
            self._trim(MAX_PROBLEMS)

    def _trim(self, keep: int) -> None:
        """Problems in line order, the first `keep` of them kept."""
        self.problems.sort(key=lambda p: p.line)
        if len(self.problems) > keep:
            self.more_problems += len(self.problems) - keep
            del self.problems[keep:]

    def _extra(self, item: Extra) -> None:
        """Count a line kept outside the entries against max_extra_bytes."""
        self.extra_bytes += len(item.raw.encode()) + 1  # (its newline too)
        if self.max_extra_bytes is not None and self.extra_bytes > self.max_extra_bytes:
            raise FileRefused(
                Problem(
                    item.line,
                    f"the lines stored outside entries (repeated header or entry lines) take more than"
                    f" {self.max_extra_bytes} bytes, the limit",
                    True,
                )
            )

    # --- one line ----------------------------------------------------------------------------------

    def _repeated(self, line: Line, first: Seen) -> None:
        _, _, _, number, source, start, end = first
        if source is None:
            assert self.reread is not None, "a line of the file is read again from it"
            source, start, end = self.reread(start, end), 0, end - start
        if source[start:end] == line.source[line.start : line.end]:
            # The same line again: pi's lazy flush re-writes header and entries after a repeated
            # header; like pi's byId map, it is the same entry, not a second one.
            self.add(Extra(line.line, line.raw))
            self._last(line.id)
        else:
            self._problem(Problem(line.line, f"duplicate id {line.id!r} (first used on line {number})"))

    def _last(self, entry_id: str) -> None:
        if self._held is None:
            self.leaf_id = entry_id
        else:
            self._tail.append(entry_id)

    def _stored_place(self, entry_id: str) -> Known | None:
        """The place of an entry stored before (None if it is not, or is one of this intake's)."""
        if self.stored is None or entry_id in self._entries:
            return None
        return self.stored.known([entry_id]).get(entry_id)

    def _is_placed(self, entry_id: object) -> bool:
        if not isinstance(entry_id, str):
            return False
        entry = self._entries.get(entry_id)
        if entry is not None:
            return entry.depth != HELD
        return self.stored is not None and entry_id in self.stored

    def _placed(self, entry_id: str) -> Seen | None:
        """This intake's entry, if it is placed."""
        entry = self._entries.get(entry_id)
        return entry if entry is not None and entry.depth != HELD else None

    def _place_of(self, entry_id: str) -> Known | Seen | None:
        return self._placed(entry_id) or self._stored_place(entry_id)

    def _kept_from(self, data: Mapping[str, Any], depth: int) -> str | None:
        """firstKeptEntryId if that entry is an ancestor of the compaction (data, at depth)."""
        target = data.get("firstKeptEntryId")
        if not isinstance(target, str):
            return None
        target_place = self._place_of(target)
        if target_place is None or target_place.depth >= depth:
            return None
        node: str | None = data["parentId"]
        while node is not None and (place := self._placed(node)) is not None:
            if node == target:
                return target
            if place.depth <= target_place.depth:
                return None
            node = place.parent_id
        if node is None or self.stored is None:
            return None
        return target if self.stored.is_ancestor(node, target, target_place.depth) else None

    # --- what was held ------------------------------------------------------------------------

    def _place_held(self) -> list[Placed]:
        assert self._held is not None
        lines = [item for item in self._held if isinstance(item, Line)]
        kept = self._keep(lines)
        # Seqs in file order; places worked out parents first, breadth-first from the entries
        # placed or stored before.
        seqs: dict[str, int] = {}
        for item in self._held:
            if isinstance(item, Extra):
                self.extra_lines.append((self.first_seq + self.placed + len(seqs) - 1, item.raw))
            elif item.id in kept:
                seqs[item.id] = self.first_seq + self.placed + len(seqs)
        by_parent: dict[str | None, list[Line]] = {}
        for line in lines:
            if line.id in kept:
                by_parent.setdefault(line.parent_id, []).append(line)
        queue = deque(ln for ln in lines if ln.id in kept and (ln.parent_id is None or ln.parent_id not in kept))
        stored_parents = self._stored_places({ln.parent_id for ln in queue if ln.parent_id is not None})
        bases = {ln.id: self._outer_place(ln.parent_id, stored_parents) for ln in queue}
        computed: dict[str, Known] = {}
        while queue:
            line = queue.popleft()
            base = bases[line.id] if line.id in bases else computed[line.parent_id]  # type: ignore[index]
            state = advance_entry(base.state if base else _ROOT, line.type, line.id, line.data)
            computed[line.id] = Known(line.parent_id, base.depth + 1 if base else 0, state)
            queue.extend(by_parent.get(line.id, ()))
        entries = self._entries
        for entry_id, known in computed.items():
            entries[entry_id] = entries[entry_id]._replace(depth=known.depth, state=known.state)
        # The listing and the compactions' checks take them in seq order, as they were stored.
        placed: list[Placed] = []
        for line in sorted((ln for ln in lines if ln.id in kept), key=lambda ln: seqs[ln.id]):
            known = computed[line.id]
            kept_from = self._kept_from(line.data, known.depth) if line.type == "compaction" else None
            update_listing(self.listing, line.data)
            placed.append(Placed(line, seqs[line.id], known.depth, known.state, kept_from))
        self.placed += len(placed)
        for entry_id in reversed(self._tail):
            if self._is_placed(entry_id):
                self.leaf_id = entry_id
                break
        return placed

    def _keep(self, lines: list[Line]) -> set[str]:
        """The held entries whose ancestors and label targets all exist; the others are problems
        (dropping one orphans its children, so repeatedly)."""
        available = {ln.id for ln in lines}
        parents = {ln.id: ln.parent_id for ln in lines}
        numbers = {ln.id: ln.line for ln in lines}
        for entry_id in check_acyclic(parents):
            available.discard(entry_id)
            self._problem(Problem(numbers[entry_id], f"entry {entry_id!r} is its own ancestor (parentId cycle)"))
        kept = [ln for ln in lines if ln.id in available]
        held = {ln.id for ln in lines}
        outside = {ln.parent_id for ln in kept if ln.parent_id is not None and ln.parent_id not in held}
        outside |= {t for ln in kept if ln.type == "label" and isinstance(t := ln.data.get("targetId"), str)}
        exists = {i for i in outside if i not in held and self._is_placed(i)}  # placed or stored before
        changed = True
        while changed:
            changed = False
            still: list[Line] = []
            for ln in kept:
                problem = None
                parent = ln.parent_id
                if parent is not None and parent not in available and parent not in exists:
                    problem = f"parentId {parent!r} does not match any entry"
                elif ln.type == "label" and (t := ln.data["targetId"]) not in available and t not in exists:
                    problem = f"label targets unknown entry {t!r}"
                if problem:
                    self._problem(Problem(ln.line, problem))
                    available.discard(ln.id)
                    changed = True
                else:
                    still.append(ln)
            kept = still
        return {ln.id for ln in kept}

    def _stored_places(self, ids: Iterable[str]) -> dict[str, Known]:
        wanted = [i for i in ids if i not in self._entries]
        if not wanted or self.stored is None:
            return {}
        return self.stored.known(wanted)

    def _outer_place(self, parent: str | None, stored: Mapping[str, Known]) -> Known | Seen | None:
        if parent is None:
            return None
        return self._placed(parent) or stored[parent]


@dataclass(slots=True)
class ReadFile:
    """A whole session file, read and placed as an import would (without storing it)."""

    header: Header | None
    placed: list[Placed]
    problems: list[Problem]
    leaf_id: str | None
    extra_lines: list[tuple[int, str]]


def read_file(data: bytes, limits: Limits | None = None) -> ReadFile:
    limits = limits or Limits()
    header, problem = read_header(data, limits)
    if header is None:
        return ReadFile(None, [], [problem] if problem else [], None, [])
    intake = Intake(reread=lambda start, end: data[start:end])
    placed = [p for item in read_entries(data, header, limits) if (p := intake.add(item)) is not None]
    placed += intake.finish()
    return ReadFile(header, placed, intake.problems, intake.leaf_id, intake.extra_lines)
