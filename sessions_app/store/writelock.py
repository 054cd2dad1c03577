"""SQLite's one write lock: whether another writer, in any process of this host, waits for it.

A writer that finds the lock taken polls for it (SQLite's busy handler: after its first ~0.3 s,
every 100 ms), so a long import could keep another writer out for as long as it writes. So every
BEGIN of a SQLite connection holds a shared flock on "<database>.writers" until it returns (most of
that time it waits for the write lock), and so does a write outside a transaction (Django's
autocommit). The import, between two batches, asks for that flock exclusively without blocking:
refused, some writer waits, and the import commits and lets the lock go until that writer has it
(store/importing/pipeline.py). SQLite's WAL mode works on one host only, so a
file lock sees every writer there can be.
"""

from __future__ import annotations

import fcntl
import os
import time
import weakref
from typing import Any

FD = "piweb_writers_fd"  # the connection's descriptor of its "<database>.writers" file


def _fd(connection: Any) -> int | None:
    fd: int | None = getattr(connection, FD, None)
    if fd is None and connection.vendor == "sqlite" and not connection.is_in_memory_db():
        fd = os.open(f"{connection.settings_dict['NAME']}.writers", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        setattr(connection, FD, fd)
        weakref.finalize(connection, os.close, fd)
    return fd


def waiting(connection: Any) -> bool:
    """Whether a writer (another connection, here or in another process) is in a BEGIN, or in a
    write outside a transaction."""
    fd = _fd(connection)
    if fd is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC")


def _takes_the_lock(sql: str, connection: Any) -> bool:
    """A BEGIN (IMMEDIATE: the transaction's writes follow), or a write outside any transaction
    (Django's autocommit: a save() or update() takes the lock on its own, with no BEGIN)."""
    if sql.startswith("BEGIN"):
        return True
    return not connection.in_atomic_block and sql.lstrip()[:6].upper() in _WRITES


def _announced(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    if not _takes_the_lock(sql, context["connection"]):
        return execute(sql, params, many, context)
    fd = _fd(context["connection"])
    if fd is None:
        return execute(sql, params, many, context)
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        return execute(sql, params, many, context)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def install(connection: Any) -> None:
    """Announce this (Django) SQLite connection's BEGINs; once per connection."""
    if connection.vendor == "sqlite" and _announced not in connection.execute_wrappers:
        connection.execute_wrappers.append(_announced)


# After its first ~0.3 s a waiting writer polls every 100 ms: a long writer (an import, the search
# indexer) lets the lock go between two transactions while another writer waits, up to YIELD_S.
YIELD_S = 0.25


def make_way(connection: Any) -> None:
    """Let another writer have SQLite's write lock between two of a long writer's transactions, if
    one waits for it."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        return
    deadline = time.monotonic() + YIELD_S
    while waiting(connection) and time.monotonic() < deadline:
        time.sleep(0.002)
