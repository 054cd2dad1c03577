"""Many entry rows at once: on SQLite, a few rows per INSERT statement instead of one.

executemany() runs its statement once per row, and on SQLite each run pays the statement's setup
and the AUTOINCREMENT bookkeeping (a read and a write of sqlite_sequence): a third of the
instructions of a 100k-entry import's inserts. Multi-row VALUES lists of ROWS_PER_STATEMENT rows
pay that once per list.

OR FAIL, because a multi-row INSERT (OR ABORT, the default) must be able to undo the rows it has
already written when a later one breaks a constraint: SQLite copies every page the statement
touches into a statement journal first (past 64 KiB, a temporary file): more work than the lists
save. With OR FAIL the rows before a failing one stay until the caller's transaction rolls back,
and every caller here does: a constraint error propagates out of its atomic block. PostgreSQL
(executemany, one row per statement) is not changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import chain
from typing import Any

COLUMNS = (
    "session_id", "seq", "entry_id", "parent_id", "type", "role", "timestamp", "ts_ms", "raw", "preview", "depth",
    "ctx_thinking", "ctx_model", "ctx_compaction_id", "kept_from_id", "author_id", "created_at", "chain_hash",
)  # fmt: skip
ROWS_PER_STATEMENT = 40  # 20 saves ~1% less, 100 ~0.3% more; SQLite allows 32,766 parameters


@cache  # a few dozen statements: each size of a last, partial list
def statement(rows: int, *, vendor: str, raw_bytes: bool = False, qmark: bool = False) -> str:
    """INSERT of `rows` rows in COLUMNS order, as the vendor's cursor takes it.

    raw_bytes: the raw column's values are the line's UTF-8 bytes (a memoryview of the file), which
    the database decodes. qmark: "?" placeholders, for a DB-API sqlite3 cursor (Django's takes %s)."""
    mark = "?" if qmark else "%s"
    text_of = {"sqlite": f"CAST({mark} AS TEXT)", "postgresql": f"convert_from({mark}, 'UTF8')"}
    one = "(" + ", ".join(text_of[vendor] if raw_bytes and name == "raw" else mark for name in COLUMNS) + ")"
    verb = "INSERT OR FAIL" if vendor == "sqlite" and rows > 1 else "INSERT"
    return f"{verb} INTO sessions_app_entry ({', '.join(COLUMNS)}) VALUES {', '.join([one] * rows)}"


def insert_rows(
    cursor: Any, rows: Sequence[Sequence[Any]], *, vendor: str, raw_bytes: bool = False, qmark: bool = False
) -> None:
    """Write rows (each in COLUMNS order) with `cursor`, in list order."""
    if not rows:
        return
    if vendor != "sqlite":
        cursor.executemany(statement(1, vendor=vendor, raw_bytes=raw_bytes, qmark=qmark), rows)
        return
    size = ROWS_PER_STATEMENT
    whole = len(rows) - len(rows) % size
    if whole:
        lists = [tuple(chain.from_iterable(rows[i : i + size])) for i in range(0, whole, size)]
        cursor.executemany(statement(size, vendor=vendor, raw_bytes=raw_bytes, qmark=qmark), lists)
    if whole < len(rows):
        rest = rows[whole:]
        cursor.execute(
            statement(len(rest), vendor=vendor, raw_bytes=raw_bytes, qmark=qmark), tuple(chain.from_iterable(rest))
        )
