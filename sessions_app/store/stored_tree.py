"""What the database holds of a session's tree, as core.intake asks for it when it places new
entries: which ids are stored, their place (depth, path state) and chain hash, their lines, and
whether one is an ancestor of another. Each answer is one indexed query, asked only when needed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable

from django.db import connection

from sessions_app.core import jsjson
from sessions_app.core.context import PathState
from sessions_app.core.intake import Known, Placed
from sessions_app.models import Entry, Session
from sessions_app.store.batches import select_in


class DbTree:
    """A session's stored entries (core.intake.StoredTree). chains collects the chain hashes of
    the stored entries looked up, which the new entries' hashes start from."""

    def __init__(
        self, session: Session, *, all_ids: bool = False, all_lines: bool = False, empty: bool = False
    ) -> None:
        """all_ids: read every stored id at once; all_lines: and a digest of every line (a file
        read whole again compares each of its lines), read as a stream; empty: none stored."""
        self.session = session
        self.chains: dict[str, str] = {}
        self._known: dict[str, Known] = {}
        self._present: dict[str, bool] = {}
        self._ids: set[str] | None = None
        self._lines: dict[str, bytes] = {}  # entry id -> _digest(line)
        if session._state.adding or empty:
            self._ids = set()
        elif all_lines:
            found = Entry.objects.filter(session=session).values_list("entry_id", "raw").iterator(chunk_size=2000)
            self._lines = {entry_id: _digest(raw.encode()) for entry_id, raw in found}
            self._ids = set(self._lines)
        elif all_ids:
            self._ids = set(Entry.objects.filter(session=session).values_list("entry_id", flat=True))

    def note(self, *, present: Iterable[str] = (), absent: Iterable[str] = ()) -> None:
        """What the caller knows already (an append has checked its ids): no query for those."""
        self._present.update((i, True) for i in present)
        self._present.update((i, False) for i in absent)

    def stored(self, placed: Iterable[Placed]) -> None:
        """These entries have just been stored."""
        for p in placed:
            self._known[p.line.id] = Known(p.line.parent_id, p.depth, p.state)
            self._present[p.line.id] = True
            if self._ids is not None:
                self._ids.add(p.line.id)

    def __contains__(self, entry_id: object) -> bool:
        if not isinstance(entry_id, str):
            return False
        if self._ids is not None:
            return entry_id in self._ids
        if entry_id not in self._present:
            self._present[entry_id] = entry_id in self.known([entry_id])
        return self._present[entry_id]

    def known(self, ids: Collection[str]) -> dict[str, Known]:
        missing = [i for i in ids if i not in self._known and self._present.get(i) is not False]
        if missing and self.session.pk is not None:
            self._fetch(missing)
        return {i: self._known[i] for i in ids if i in self._known}

    def _fetch(self, ids: list[str]) -> None:
        rows = select_in(
            "SELECT entry_id, parent_id, depth, ctx_thinking, ctx_model, ctx_compaction_id, chain_hash"
            " FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({marks})",
            [self.session.pk],
            dict.fromkeys(ids),
        )
        for entry_id, parent_id, depth, thinking, model, compaction, chain in rows:
            state = PathState(jsjson.loads(thinking), jsjson.loads(model) if model else None, compaction)
            self._known[entry_id] = Known(parent_id, depth, state)
            self._present[entry_id] = True
            self.chains[entry_id] = chain or ""

    def same_line(self, entry_id: str, line: bytes) -> bool:
        if entry_id not in self._lines:
            self._lines[entry_id] = _digest(Entry.objects.get(session=self.session, entry_id=entry_id).raw.encode())
        return self._lines[entry_id] == _digest(line)

    def is_ancestor(self, start_id: str, target_id: str, target_depth: int) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(_ANCESTOR, [self.session.pk, start_id, self.session.pk, target_depth, target_id])
            return cursor.fetchone() is not None


def _digest(line: bytes) -> bytes:
    """A line's stand-in (16 bytes instead of the line: a whole session's are held at once)."""
    return hashlib.blake2b(line, digest_size=16).digest()


_ANCESTOR = """
WITH RECURSIVE up(entry_id, parent_id, depth) AS (
    SELECT entry_id, parent_id, depth FROM sessions_app_entry WHERE session_id = %s AND entry_id = %s
    UNION ALL
    SELECT e.entry_id, e.parent_id, e.depth FROM sessions_app_entry e JOIN up
        ON e.session_id = %s AND e.entry_id = up.parent_id
    WHERE up.depth > %s
) SELECT 1 FROM up WHERE entry_id = %s"""
