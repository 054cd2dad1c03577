"""SQLite's one write lock: how many threads of this process are waiting for it.

A writer that finds the lock taken polls for it (SQLite's busy handler: after its first ~0.3 s,
every 100 ms), so a long import could keep another writer out for as long as it writes. The
import lets the lock go between batches when a thread of this process waits for it (it knows:
every BEGIN of a SQLite connection is counted here), and, for writers in other processes it cannot
see, for 110 ms after each second it held it (store/importing/pipeline.py).
"""

from __future__ import annotations

import threading
from typing import Any

_count = 0
_lock = threading.Lock()


def waiting() -> int:
    """Threads of this process in a BEGIN that has not returned (most of them wait for the lock)."""
    return _count


def _counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    global _count
    if not sql.startswith("BEGIN"):
        return execute(sql, params, many, context)
    with _lock:
        _count += 1
    try:
        return execute(sql, params, many, context)
    finally:
        with _lock:
            _count -= 1


def install(connection: Any) -> None:
    """Count this (Django) SQLite connection's BEGINs; once per connection."""
    if connection.vendor == "sqlite" and _counted not in connection.execute_wrappers:
        connection.execute_wrappers.append(_counted)
