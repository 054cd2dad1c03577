"""SQLite: a big write gets a bigger page cache, and its WAL checkpoint runs in a background thread.

In WAL mode a commit appends pages to the -wal file, and a checkpoint copies them into the
database and fsyncs both. SQLite runs it inside the commit that takes the WAL past 1,000 pages, so
a 100k-entry import (~185 MB of WAL) would wait 0.5-0.9 s for it before returning. Around such a
write, deferred() turns the automatic checkpoint off for this connection and, once committed, runs
a PASSIVE checkpoint on a connection of its own in a thread: what SQLite's WAL documentation
suggests for large writes, and what PostgreSQL's checkpointer does for every commit. Readers and
writers carry on meanwhile. The thread is not a daemon, so a command that exits waits for it.

Every other write: SQLite's automatic checkpoint (every 1,000 WAL pages) runs inside the commit
that crosses the line, fsyncs included: every ~60th append took 15-20 ms instead of ~1.5 ms. So on
a database file each process that uses one also runs a watcher thread (watch()): every
PIWEB_WAL_CHECKPOINT_MS, if the WAL changed, a PASSIVE checkpoint on a connection of its own.
The connections' automatic checkpoint stays on as a backstop at SAFETY_NET_PAGES: under a steady
stream of writes a PASSIVE checkpoint never finds the WAL idle, so the WAL only starts over when
that one runs (1,000 back-to-back appends: 4 such stalls of 11-44 ms instead of 16 of 15-20 ms).

The page cache: a 100k-entry import inserts into its indexes in random key order (entry ids), ~6 MB
of index pages. SQLite's default 2 MB cache cannot hold them while the table's pages stream
through, so most inserts read an index page back from the WAL; a cache of an eighth of the write
(16-64 MiB) keeps them, ~0.5 s less on such an import. It is the connection's own and shrinks back
afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

from sessions_app.store import writelock

log = logging.getLogger(__name__)

THREAD_NAME = "piweb-wal-checkpoint"
WATCH_THREAD_NAME = "piweb-wal-watch"
SAFETY_NET_PAGES = 4_000  # ~16 MB of WAL: SQLite checkpoints inline only if the watcher cannot


@contextlib.contextmanager
def deferred(size: int) -> Iterator[None]:
    """Around a transaction writing about `size` bytes: checkpoint afterwards, in the background.

    Nothing changes on PostgreSQL, below PIWEB_BACKGROUND_CHECKPOINT_BYTES, or inside an outer
    transaction (its commit, later, is the one that would checkpoint)."""
    threshold = settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES
    if connection.vendor != "sqlite" or connection.in_atomic_block or threshold < 0 or size < threshold:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (pages,) = cursor.fetchone()
        cursor.execute("PRAGMA cache_size")
        (cache,) = cursor.fetchone()
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.execute(f"PRAGMA cache_size={-cache_kib(size)}")  # negative: KiB, not pages
    committed = False
    try:
        yield
        committed = True
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
            cursor.execute(f"PRAGMA cache_size={int(cache)}")
        if committed:
            path = str(connection.settings_dict["NAME"])
            threading.Thread(target=checkpoint, args=(path,), name=THREAD_NAME).start()


CACHE_KIB = (16 * 1024, 64 * 1024)  # the page cache for a big write: at least, at most


def cache_kib(size: int) -> int:
    """The page cache (KiB) for a write of about `size` bytes."""
    low, high = CACHE_KIB
    return max(low, min(high, size // 8 // 1024))


def checkpoint(path: str) -> None:
    """A PASSIVE checkpoint: copies what it can without waiting for readers or writers."""
    try:
        # mode=rw: a database removed meanwhile (a test database, say) is not created anew.
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:  # the next automatic checkpoint does the work instead
        log.warning("background WAL checkpoint of %s failed: %s", path, exc)


_watched: set[str] = set()
_watched_lock = threading.Lock()


def connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Receiver of Django's connection_created: SQLite database files get a watcher, and their
    connections announce their BEGINs to imports waiting to make way (writelock.py)."""
    writelock.install(connection)
    interval = settings.PIWEB_WAL_CHECKPOINT_MS / 1000
    if connection.vendor != "sqlite" or interval <= 0 or connection.is_in_memory_db():
        return
    path = Path(connection.settings_dict["NAME"])
    if not path.exists():
        return
    connection.connection.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
    watch(str(path.resolve()), interval)


def watch(path: str, interval: float) -> None:
    """Start this process's watcher of the database file at path (once)."""
    with _watched_lock:
        if path in _watched:
            return
        _watched.add(path)
    threading.Thread(target=_watch, args=(path, interval), name=WATCH_THREAD_NAME, daemon=True).start()


def _watch(path: str, interval: float) -> None:
    seen: tuple[int, int] | None = None
    database, wal = Path(path), Path(path + "-wal")
    while True:
        time.sleep(interval)
        try:
            stat = wal.stat()
        except OSError:  # no WAL (yet, or the database is gone): nothing to copy
            continue
        if not database.exists():  # removed (a test database at teardown): not worth a warning
            continue
        if (stat.st_mtime_ns, stat.st_size) != seen:
            checkpoint(path)
            seen = (stat.st_mtime_ns, stat.st_size)
