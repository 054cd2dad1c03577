"""The entry row: its columns, how it is made from a placed entry, its chain hash, and the INSERTs
that write many at once. Pure (no Django): the import worker builds rows in a child process.

Many rows at once: on SQLite, a few rows per INSERT statement instead of one. executemany() runs
its statement once per row, and on SQLite each run pays the statement's setup and the
AUTOINCREMENT bookkeeping (a read and a write of sqlite_sequence): a third of the instructions of
a 100k-entry import's inserts. Multi-row VALUES lists of ROWS_PER_STATEMENT rows pay that once.

OR FAIL, because a multi-row INSERT (OR ABORT, the default) must be able to undo the rows it has
already written when a later one breaks a constraint: SQLite copies every page the statement
touches into a statement journal first (past 64 KiB, a temporary file): more work than the lists
save. With OR FAIL the rows before a failing one stay until the caller's transaction rolls back,
and every caller here does: a constraint error propagates out of its atomic block. PostgreSQL
(executemany, one row per statement) is not changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from itertools import chain
from typing import Any

from sessions_app.core.chain import keyed
from sessions_app.core.context import StateJson, state_json
from sessions_app.core.intake import Placed

COLUMNS = (
    "session_id", "seq", "entry_id", "parent_id", "type", "role", "timestamp", "ts_ms", "raw", "preview", "depth",
    "ctx_thinking", "ctx_model", "ctx_compaction_id", "kept_from_id", "author_id", "created_at", "chain_hash",
)  # fmt: skip
# The columns a row derives from its line and its place in the tree (entry_row), which
# verify_sessions derives again and compares (store/integrity.py). entry_id and parent_id first.
DERIVED = (
    "entry_id", "parent_id", "type", "role", "timestamp", "ts_ms", "preview", "depth",
    "ctx_thinking", "ctx_model", "ctx_compaction_id", "kept_from_id",
)  # fmt: skip
ROWS_PER_STATEMENT = 40  # 20 saves ~1% less, 100 ~0.3% more; SQLite allows 32,766 parameters


@cache  # a few dozen statements: each size of a last, partial list
def statement(rows: int, *, vendor: str, raw_bytes: bool = False) -> str:
    """INSERT of `rows` rows in COLUMNS order, as the vendor's cursor takes it.

    raw_bytes: the raw column's values are the line's UTF-8 bytes (a memoryview of the file), which
    the database decodes."""
    text_of = {"sqlite": "CAST(%s AS TEXT)", "postgresql": "convert_from(%s, 'UTF8')"}
    one = "(" + ", ".join(text_of[vendor] if raw_bytes and name == "raw" else "%s" for name in COLUMNS) + ")"
    verb = "INSERT OR FAIL" if vendor == "sqlite" and rows > 1 else "INSERT"
    return f"{verb} INTO sessions_app_entry ({', '.join(COLUMNS)}) VALUES {', '.join([one] * rows)}"


def insert_rows(cursor: Any, rows: Sequence[Sequence[Any]], *, vendor: str, raw_bytes: bool = False) -> None:
    """Write rows (each in COLUMNS order) with `cursor`, in list order."""
    if not rows:
        return
    if vendor != "sqlite":
        cursor.executemany(statement(1, vendor=vendor, raw_bytes=raw_bytes), rows)
        return
    size = ROWS_PER_STATEMENT
    whole = len(rows) - len(rows) % size
    if whole:
        lists = [tuple(chain.from_iterable(rows[i : i + size])) for i in range(0, whole, size)]
        cursor.executemany(statement(size, vendor=vendor, raw_bytes=raw_bytes), lists)
    if whole < len(rows):
        rest = rows[whole:]
        cursor.execute(statement(len(rest), vendor=vendor, raw_bytes=raw_bytes), tuple(chain.from_iterable(rest)))


# entry_row's raw for the import worker: a line of the file as its (start, end) offsets in it (the
# importing process has the file too), any other line (migrated from v1/v2) as its UTF-8 bytes.
AT_OFFSETS: Any = object()
_SEQ, _ID, _PARENT, _RAW, _CHAIN = (COLUMNS.index(c) for c in ("seq", "entry_id", "parent_id", "raw", "chain_hash"))


def entry_row(
    placed: Placed, raw: Any, session_pk: int, author_id: int | None, created_at: Any, states: dict[int, StateJson]
) -> list[Any]:
    """The row of a placed entry, in COLUMNS order. raw is what the raw column is bound to (the
    line as str or as UTF-8 bytes), or AT_OFFSETS; the chain hash is left to hash_rows. states
    caches each path state's JSON (states are shared along a path)."""
    line, seq, depth, state, kept_from = placed
    _, source, start, end, data, preview, ts_ms, offset = line
    if raw is AT_OFFSETS:
        raw = (offset, offset + end - start) if offset >= 0 else bytes(source[start:end])
    kind = data["type"]
    role = data["message"].get("role") if kind == "message" else None  # (validated: a str)
    cached = states.get(id(state))  # state_json's cache, looked up here first: the common case
    _, thinking, model = cached if cached is not None else state_json(states, state)
    return [
        session_pk, seq, data["id"], data["parentId"], kind, role, data["timestamp"], ts_ms, raw,
        preview, depth, thinking, model, state.compaction_id, kept_from, author_id, created_at, None,
    ]  # fmt: skip


def hash_rows(key: bytes, rows: Iterable[list[Any]], chains: dict[str, str], digest: str) -> str:
    """Fill in the chain hash of each row (its raw column the line's UTF-8 bytes or str), and
    return the session's running digest after them (rows in seq order). chains maps the ids of
    the entries before (or their parents, at least) to their chain hashes and gets these rows' too.

    core.chain's entry_chain_hash and session_digest, inlined (a 100k import's bound thread). A
    row whose parent comes later (a file with children before their parents) waits for it."""
    inner, outer = keyed(key)
    waiting: dict[str, list[list[Any]]] = {}
    ordered = rows if isinstance(rows, list) else list(rows)
    for row in ordered:
        parent = row[_PARENT]
        if parent is not None and parent not in chains:
            waiting.setdefault(parent, []).append(row)
            continue
        # _hash_row, inlined: this loop is the bound thread of a large import.
        h = inner.copy()
        h.update(f"{chains[parent] if parent is not None else ''}\n{row[_SEQ]}\n{row[_ID]}\n".encode())
        raw = row[_RAW]
        h.update(raw.encode() if type(raw) is str else raw)
        o = outer.copy()
        o.update(h.digest())
        row[_CHAIN] = chains[row[_ID]] = o.hexdigest()
        if waiting:
            todo = [row]
            while todo:  # the rows that waited for it, and those below them
                done = todo.pop()
                for child in waiting.pop(done[_ID], ()):
                    _hash_row(inner, outer, child, done[_CHAIN], chains)
                    todo.append(child)
    assert not waiting, f"rows whose parents were not given: {sorted(waiting)[:3]}"
    for row in ordered:
        h = inner.copy()
        h.update(f"{digest}:{row[_CHAIN]}".encode())
        o = outer.copy()
        o.update(h.digest())
        digest = o.hexdigest()
    return digest


def _hash_row(inner: Any, outer: Any, row: list[Any], parent_chain: str, chains: dict[str, str]) -> None:
    h = inner.copy()
    h.update(f"{parent_chain}\n{row[_SEQ]}\n{row[_ID]}\n".encode())
    raw = row[_RAW]
    h.update(raw.encode() if type(raw) is str else raw)
    o = outer.copy()
    o.update(h.digest())
    row[_CHAIN] = chains[row[_ID]] = o.hexdigest()
