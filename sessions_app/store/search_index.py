"""Keeping the search index (models.SearchDoc, migration 0013) in step with the entries.

One writer, write_rows, of the rows searchtext.index_rows makes from stored entries. A session's
indexed_seq says how far its entries are indexed: NULL, all of them. Writes of a few entries
(appends, chat turns, forks: services._store) index them in their own transaction (index_new). An
import of up to PIWEB_SEARCH_INDEX_INLINE_ENTRIES entries is indexed in the transaction that
publishes it (index_published); a larger one is published unindexed (the mark set behind it:
mark_behind) and caught up by the process's indexer thread, so that a 100k-entry import is
readable as soon as its rows are (its index costs as much again). Meanwhile
the session says "indexing…" and a search names the sessions it could not fully see
(search.Result.indexing). A stopped indexer's backlog is resumed by the janitor. Deletes remove a
session's documents with its entries (services._delete_whole).
"""

from __future__ import annotations

import logging
import threading
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from sessions_app.core import jsjson
from sessions_app.core.searchtext import IndexRow, index_rows
from sessions_app.models import VISIBLE, Session
from sessions_app.store import message_spans, run_starts, writelock

log = logging.getLogger(__name__)

BATCH = 2000  # entries read per query, at most
BATCH_BYTES = 4_000_000  # about this much line text per query: memory stays bounded on a file of huge lines
_COLS = ("session_id", "seq", "entry_id", "kind", "role", "tool", "model", "ts_ms", "text")
FTS = "sessions_app_search_fts"  # SQLite's FTS5 index over sessions_app_searchdoc (migration 0013)
# The prefix lengths FTS5 keeps an index of (migration 0020): a prefix query of one of these
# lengths reads one list of matches; of another length, the lists of every term it begins.
FTS_PREFIXES = (2, 3)
# What _index_range writes beside the documents, from the same lines: shortcuts of the context
# (store/message_spans.py, store/run_starts.py), deleted with them.
_BESIDE = ("sessions_app_messagespan", "sessions_app_runstart")
ANALYZE_AFTER = 5000  # documents one catch-up writes: PostgreSQL's statistics of them are renewed after
ROWS = 100  # documents per INSERT (9 parameters each: well under SQLite's limit)
_ONE = "(" + ", ".join(["%s"] * len(_COLS)) + ")"


@cache
def _insert(rows: int) -> str:
    return f"INSERT INTO sessions_app_searchdoc ({', '.join(_COLS)}) VALUES {', '.join([_ONE] * rows)}"


def index_published(session: Session, *, upto: int) -> int | None:
    """In the transaction that publishes an import's entries past seq `upto` (the session's row
    locked): up to PIWEB_SEARCH_INDEX_INLINE_ENTRIES of them are indexed there, searchable as they
    become visible; more are left to catch_up_soon (mark_behind). Returns the session's mark."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexed_seq, last_seq FROM sessions_app_session WHERE id = %s", [session.pk])
        found = cursor.fetchone()
    if found is not None and found[0] is None and found[1] - upto <= settings.PIWEB_SEARCH_INDEX_INLINE_ENTRIES:
        _index_range(session.pk, upto, None)
        return None
    return mark_behind(session, upto=upto)


def mark_behind(session: Session, *, upto: int) -> int | None:
    """In the transaction that publishes entries past seq `upto` without indexing them: the session
    is indexed up to `upto` at most (or to where it was already behind). Returns the new mark."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE sessions_app_session SET indexed_seq = CASE WHEN indexed_seq IS NULL OR indexed_seq > %s "
            "THEN %s ELSE indexed_seq END WHERE id = %s",
            [upto, upto, session.pk],
        )
        cursor.execute("SELECT indexed_seq FROM sessions_app_session WHERE id = %s", [session.pk])
        found = cursor.fetchone()
    return None if found is None else found[0]


def index_new(session: Session, *, after: int) -> None:
    """In the transaction that stores a few entries (an append, a chat turn, a fork), with the
    session's row locked: index the entries past seq `after`, unless the session is behind (its
    backlog's indexer reaches them)."""
    if session.indexed_seq is None:
        _index_range(session.pk, after, None)


def catch_up(session_pk: int) -> int:
    """Index a session that is behind, a batch per transaction (another writer may go between two),
    until it is not; returns how many documents were written. Each batch first moves the mark past
    the entries it indexes, under the write lock: two indexers of one session share the work and
    never index an entry twice. Stops when the session is gone."""
    written = 0
    size = 50  # the first batch is small; the next ones sized by the lines' length so far
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                # Locked on PostgreSQL (SQLite's IMMEDIATE transaction holds the write lock): an
                # append committed between this read and the claim would leave its entries behind
                # a mark set to NULL from a stale last_seq, unsearchable for good.
                lock = " FOR NO KEY UPDATE" if connection.vendor == "postgresql" else ""
                read = "SELECT indexed_seq, last_seq FROM sessions_app_session WHERE id = %s"
                cursor.execute(read + lock, [session_pk])
                found = cursor.fetchone()
                if found is None or found[0] is None:
                    break
                mark, last = found
                upto = min(mark + size, last)
                cursor.execute(
                    "UPDATE sessions_app_session SET indexed_seq = %s WHERE id = %s AND indexed_seq = %s",
                    [None if upto >= last else upto, session_pk, mark],
                )
                claimed = cursor.rowcount == 1
            if claimed:
                count, per_line = _index_range(session_pk, mark, upto)
                written += count
                size = max(10, min(BATCH, BATCH_BYTES // max(1, per_line)))
        writelock.make_way(connection)
    if written >= ANALYZE_AFTER and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Fresh statistics, or PostgreSQL finds a common word's newest hits through a bitmap
            # of all its matches (store/search.py).
            cursor.execute("ANALYZE sessions_app_searchdoc")
    return written


def _index_range(session_pk: int, after: int, upto: int | None) -> tuple[int, int]:
    """Index the entries with after < seq <= upto (None: to the last); (documents, bytes per line).
    Read a batch at a time, each sized by the lines' length so far: memory stays bounded on a file
    of huge lines."""
    run_starts.write(session_pk, after=after, upto=upto)
    written = lines = size = 0
    limit = 50
    # SQLite's stored UTF-8 as it is: parsed and searched for spans with no decode and encode again.
    raw = "CAST(raw AS BLOB)" if connection.vendor == "sqlite" else "raw"
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT seq, ts_ms, {raw} FROM sessions_app_entry WHERE session_id = %s AND seq > %s AND seq <= %s "
                "ORDER BY seq LIMIT %s",
                [session_pk, after, upto if upto is not None else 2**62, limit],
            )
            found = cursor.fetchall()
        if not found:
            return written, size // max(1, lines)
        lines += len(found)
        size += sum(len(r[2]) for r in found)
        written += _write(session_pk, found)
        after = found[-1][0]
        limit = max(10, min(BATCH, BATCH_BYTES // max(1, size // lines)))


def _write(session_pk: int, found: list[tuple[Any, ...]]) -> int:
    """Index these (seq, ts_ms, line) rows, and store their message spans (the lines parsed once)."""
    parsed = [(seq, raw, jsjson.loads(raw)) for seq, _, raw in found]
    rows, targets = index_rows((seq, ts_ms, data) for (seq, ts_ms, _), (_, _, data) in zip(found, parsed, strict=True))
    message_spans.write(session_pk, parsed)
    return write_rows(session_pk, rows, targets)


def write_rows(session_pk: int, rows: list[IndexRow], targets: list[str]) -> int:
    """Store index rows (searchtext.index_rows) as session_pk's, after the label rows of targets
    stored before (a label set or cleared replaces the one in force). Returns how many."""
    for start in range(0, len(targets), 500):
        part = targets[start : start + 500]
        _delete_docs(labels_of(len(part)), [session_pk, *part])
    if not rows:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor != "sqlite":
            # COPY: one stream, no statement to parse per row; the tsvector is computed as it lands.
            with cursor.cursor.copy(f"COPY sessions_app_searchdoc ({', '.join(_COLS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((session_pk, *row))
            return len(rows)
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM sessions_app_searchdoc")
        before = cursor.fetchone()[0]
        # Many rows per statement: one statement run per ROWS documents rather than per document.
        whole = len(rows) - len(rows) % ROWS
        if whole:
            cursor.executemany(_insert(ROWS), [_params(session_pk, rows[i : i + ROWS]) for i in range(0, whole, ROWS)])
        if whole < len(rows):
            cursor.execute(_insert(len(rows) - whole), _params(session_pk, rows[whole:]))
        cursor.execute(
            f"INSERT INTO {FTS}(rowid, text) SELECT id, text FROM sessions_app_searchdoc WHERE id > %s", [before]
        )
    return len(rows)


def labels_of(targets: int) -> str:
    """The documents of the labels in force on that many targets of a session (its pk, then the
    targets, as parameters): read through the partial index searchdoc_label_target (migration 0022)."""
    return f"session_id = %s AND kind = 'label' AND entry_id IN ({', '.join(['%s'] * targets)})"


def _params(session_pk: int, rows: list[IndexRow]) -> list[Any]:
    params: list[Any] = []
    for row in rows:
        params.append(session_pk)
        params.extend(row)
    return params


def _delete_docs(where: str, params: list[Any]) -> None:
    """Delete documents, and on SQLite their terms from the FTS5 index first (an external-content
    table is told what it indexed)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"INSERT INTO {FTS}({FTS}, rowid, text) SELECT 'delete', id, text FROM sessions_app_searchdoc "
                f"WHERE {where}",
                params,
            )
        cursor.execute(f"DELETE FROM sessions_app_searchdoc WHERE {where}", params)


def delete_session(session_pk: int) -> None:
    """The session's documents, and the rows kept beside them (_BESIDE)."""
    _delete_docs("session_id = %s", [session_pk])
    with connection.cursor() as cursor:
        for table in _BESIDE:
            cursor.execute(f"DELETE FROM {table} WHERE session_id = %s", [session_pk])


def reindex_all() -> tuple[int, int]:
    """Rebuild every session's documents: (sessions, documents)."""
    sessions = documents = 0
    for pk in Session.objects.filter(staging__isnull=True).order_by("pk").values_list("pk", flat=True).iterator():
        with transaction.atomic():
            delete_session(pk)
            Session.objects.filter(pk=pk).update(indexed_seq=0)
        documents += catch_up(pk)
        sessions += 1
    with transaction.atomic():
        _delete_docs("session_id NOT IN (SELECT id FROM sessions_app_session)", [])
        with connection.cursor() as cursor:
            for table in _BESIDE:
                cursor.execute(f"DELETE FROM {table} WHERE session_id NOT IN (SELECT id FROM sessions_app_session)")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE sessions_app_searchdoc")  # (store/search.py's plans need its statistics)
    return sessions, documents


# --- the backlog: published entries not indexed yet --------------------------------------------

# One indexer thread per process, working through a queue of sessions: a crash during a bulk
# import leaves many behind, and a thread (and a database connection) each would not do.
_running: set[int] = set()  # sessions queued or being caught up in this process
_queue: list[int] = []
_thread: list[threading.Thread] = []  # the indexer thread, while it runs
_running_lock = threading.Lock()


def catch_up_soon(session_pk: int) -> None:
    """After entries were published unindexed (an import): a small backlog is indexed now, before
    the import returns; a large one by the process's indexer thread, once the publishing
    transaction commits, so that the session is readable first (its import returns sooner)."""
    behind = (
        Session.objects.filter(pk=session_pk, indexed_seq__isnull=False).values_list("last_seq", "indexed_seq").first()
    )
    if behind is None:
        return
    if behind[0] - (behind[1] or 0) <= settings.PIWEB_SEARCH_INDEX_INLINE_ENTRIES:
        catch_up(session_pk)
    else:
        transaction.on_commit(lambda: _start(session_pk))


def resume_pending() -> int:
    """Start an indexer for every visible session left behind (its indexer's process stopped):
    run by the janitor (live/streaming.py). Returns how many were started."""
    pending = Session.objects.filter(VISIBLE, indexed_seq__isnull=False).values_list("pk", flat=True)
    return sum(_start(pk) for pk in list(pending))


def _start(session_pk: int) -> bool:
    """Queue the session for this process's indexer thread (started if it is not running)."""
    with _running_lock:
        if session_pk in _running:
            return False
        _running.add(session_pk)
        _queue.append(session_pk)
        if not _thread:
            # Not a daemon: a command that imports (manage.py import) exits once its sessions are searchable.
            _thread.append(threading.Thread(target=_run, name="piweb-search-index"))
            _thread[0].start()
    return True


def _run() -> None:
    try:
        while True:
            with _running_lock:
                if not _queue:
                    _thread.clear()
                    return
                session_pk = _queue.pop(0)
            try:
                catch_up(session_pk)
            except Exception:  # the janitor queues it again (resume_pending)
                log.exception("indexing session %s stopped", session_pk)
            finally:
                with _running_lock:
                    _running.discard(session_pk)
    finally:
        connection.close()  # this thread's own connection


def wait_for_indexers(timeout: float = 60.0) -> bool:
    """Whether this process's indexer threads all ended within `timeout` seconds (benches, tests)."""
    for thread in [t for t in threading.enumerate() if t.name == "piweb-search-index"]:
        thread.join(timeout)
    with _running_lock:
        return not _running
