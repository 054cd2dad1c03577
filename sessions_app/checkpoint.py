"""SQLite: a big write gets a bigger page cache, and its WAL checkpoint runs in a background thread.

In WAL mode a commit appends pages to the -wal file, and a checkpoint copies them into the
database and fsyncs both. SQLite runs it inside the commit that takes the WAL past 1,000 pages, so
a 100k-entry import (~185 MB of WAL) would wait 0.5-0.9 s for it before returning. Around such a
write, deferred() turns the automatic checkpoint off for this connection and, once committed, runs
a PASSIVE checkpoint on a connection of its own in a thread: what SQLite's WAL documentation
suggests for large writes, and what PostgreSQL's checkpointer does for every commit. Readers and
writers carry on meanwhile. The thread is not a daemon, so a command that exits waits for it.

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
from collections.abc import Iterator

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)

THREAD_NAME = "piweb-wal-checkpoint"


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
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:  # the next automatic checkpoint does the work instead
        log.warning("background WAL checkpoint of %s failed: %s", path, exc)
