"""SQLite: the WAL checkpoint after a big write runs in a background thread, not in the write.

In WAL mode a commit appends pages to the -wal file, and a checkpoint copies them into the
database and fsyncs both. SQLite runs it inside the commit that takes the WAL past 1,000 pages, so
a 100k-entry import (~185 MB of WAL) would wait 0.5-0.9 s for it before returning. Around such a
write, deferred() turns the automatic checkpoint off for this connection and, once committed, runs
a PASSIVE checkpoint on a connection of its own in a thread: what SQLite's WAL documentation
suggests for large writes, and what PostgreSQL's checkpointer does for every commit. Readers and
writers carry on meanwhile. The thread is not a daemon, so a command that exits waits for it.
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
        cursor.execute("PRAGMA wal_autocheckpoint=0")
    committed = False
    try:
        yield
        committed = True
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
        if committed:
            path = str(connection.settings_dict["NAME"])
            threading.Thread(target=checkpoint, args=(path,), name=THREAD_NAME).start()


def checkpoint(path: str) -> None:
    """A PASSIVE checkpoint: copies what it can without waiting for readers or writers."""
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:  # the next automatic checkpoint does the work instead
        log.warning("background WAL checkpoint of %s failed: %s", path, exc)
