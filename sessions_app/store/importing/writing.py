"""Step 5 of an import (pipeline.py): the rows written as they come, in the importing process.

Each batch gets its rows' chain hashes and the session's running digest (rows.hash_rows), then
goes in by multi-row INSERTs (rows.insert_rows) with bulkwrite's settings held. A transaction stays
open across batches until another writer waits for SQLite's write lock (checked after every
WRITE_ROWS rows and every message, an idle tick of the worker's included), or it has been open
COMMIT_AFTER_S, or the build pauses, or the rows end. Each commit also touches the staging
session: it is alive. Not one transaction per batch: every commit writes again the index pages
its random entry ids touched (bench/bench_import_ab.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from sessions_app.core.filesource import Source
from sessions_app.store import rows, writelock
from sessions_app.store.importing import bulkwrite, worker
from sessions_app.store.services import chain_key
from sessions_app.store.stored_tree import DbTree

WRITE_ROWS = 1000  # rows between two looks for a waiting writer
COMMIT_AFTER_S = 5.0  # the longest a transaction stays open while no other writer waits


class WorkerFailed(Exception):
    def __init__(self, reason: str, reported: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reported = reported  # progress already reported


def write(
    session_pk: Callable[[], int],
    digest: str,
    source: Source,
    messages: Iterator[tuple[str, Any]],
    tree: DbTree,
    progress: Callable[[int], None] | None,
) -> tuple[worker.Summary, str] | WorkerFailed:
    """Write the rows as they come (see the module docstring) to the staging session session_pk()
    gives (a re-import's is made on the first batch), continuing the session's digest; the
    summary and the digest after them, or what the worker reported when it failed."""
    key = chain_key()
    lines = source.view()
    reported = 0
    raw_at = rows.COLUMNS.index("raw")
    vendor = connection.vendor
    opened: float | None = None  # when the open transaction began
    pk: int | None = None

    def settle(*, now: bool = False) -> None:
        nonlocal opened
        if opened is None:
            return
        if now or time.monotonic() - opened >= COMMIT_AFTER_S or writelock.waiting(connection):
            _commit(open_transaction, pk=pk)
            opened = None

    with bulkwrite.gc_paused(), bulkwrite.sqlite_binding(), contextlib.ExitStack() as open_transaction:
        for kind, payload in messages:
            if kind == "rows":
                pk = session_pk()
                size = 0
                for row in payload:
                    row[0] = pk
                    raw = row[raw_at]
                    if type(raw) is tuple:
                        row[raw_at] = lines[raw[0] : raw[1]]
                        size += raw[1] - raw[0]
                digest = rows.hash_rows(key, payload, tree.chains, digest)
                # (a message may hold every entry held for the end of the file: written in parts)
                for at in range(0, len(payload), WRITE_ROWS):
                    if opened is None:
                        open_transaction.enter_context(transaction.atomic())
                        opened = time.monotonic()
                    with connection.cursor() as cursor:
                        rows.insert_rows(cursor, payload[at : at + WRITE_ROWS], vendor=vendor, raw_bytes=True)
                    settle()
                source.read(size)
                continue
            if kind == "progress":
                reported += payload
                if progress is not None:
                    progress(payload)
            elif kind == "pause":  # the build places held entries, which may take a while
                settle(now=True)
            elif kind == "done":
                settle(now=True)
                return payload, digest
            elif kind != "idle":  # (idle: the worker is still building the next rows)
                return WorkerFailed(str(payload), reported)
            settle()
    return WorkerFailed("the rows ended without a summary", reported)


def _commit(open_transaction: contextlib.ExitStack, *, pk: int | None) -> None:
    """Touch the staging session and commit; let a waiting writer in."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE sessions_app_session SET updated_at = %s WHERE id = %s",
            [connection.ops.adapt_datetimefield_value(timezone.now()), pk],
        )
    open_transaction.close()
    writelock.make_way(connection)
