"""Keeping the search index (models.SearchDoc, migration 0012) in step with the entries.

One writer, write_rows, of the rows searchtext.index_rows makes; two ways to reach it. A new
session's import builds them in its worker from the entries it parses anyway and writes them with
its staging batches (importing/worker.Job.search): reading and parsing 100k entries again doubled
an import. Every other write path calls index_session, which reads the entries past the last
indexed one, in its own transaction after its rows: appends and chat turns (services._store),
re-imports and sync increments when published (importing/pipeline._publish, which calls it for a
new session too: it then finds nothing left), forks. Deletes remove a session's documents with its
entries (services._delete_whole). Idempotent: run twice, it indexes nothing new.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection, transaction

from sessions_app.core import jsjson
from sessions_app.core.searchtext import IndexRow, index_rows
from sessions_app.models import Session

BATCH = 2000  # entries read per query, at most
BATCH_BYTES = 4_000_000  # about this much line text per query: memory stays bounded on a file of huge lines
_COLS = ("session_id", "seq", "entry_id", "kind", "role", "tool", "model", "ts_ms", "text")
FTS = "sessions_app_search_fts"  # SQLite's FTS5 index over sessions_app_searchdoc (migration 0012)
ROWS = 100  # documents per INSERT (9 parameters each: well under SQLite's limit)
_ONE = "(" + ", ".join(["%s"] * len(_COLS)) + ")"


@cache
def _insert(rows: int) -> str:
    return f"INSERT INTO sessions_app_searchdoc ({', '.join(_COLS)}) VALUES {', '.join([_ONE] * rows)}"


def indexed_upto(session_pk: int) -> int:
    """The seq of the last entry that gave a document (entries after it are read again: cheap,
    they gave none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT MAX(seq) FROM sessions_app_searchdoc WHERE session_id = %s", [session_pk])
        found = cursor.fetchone()
    return int(found[0] or 0) if found else 0


def index_session(session_pk: int) -> int:
    """Index the session's entries not indexed yet; returns how many documents were written."""
    written = 0
    after = indexed_upto(session_pk)
    size = 50  # the first batch is small; the next ones sized by the lines' length so far
    with transaction.atomic():
        while True:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT seq, ts_ms, raw FROM sessions_app_entry WHERE session_id = %s AND seq > %s "
                    "ORDER BY seq LIMIT %s",
                    [session_pk, after, size],
                )
                found = cursor.fetchall()
            if not found:
                return written
            written += _write(session_pk, found)
            after = found[-1][0]
            per_line = max(1, sum(len(r[2]) for r in found) // len(found))
            size = max(10, min(BATCH, BATCH_BYTES // per_line))
            del found


def _write(session_pk: int, found: list[tuple[Any, ...]]) -> int:
    rows, targets = index_rows((seq, ts_ms, jsjson.loads(raw)) for seq, ts_ms, raw in found)
    return write_rows(session_pk, rows, targets)


def write_rows(session_pk: int, rows: list[IndexRow], targets: list[str]) -> int:
    """Store index rows (searchtext.index_rows) as session_pk's, after the label rows of targets
    stored before (a label set or cleared replaces the one in force). Returns how many."""
    for start in range(0, len(targets), 500):
        part = targets[start : start + 500]
        marks = ", ".join(["%s"] * len(part))
        _delete_docs(f"session_id = %s AND kind = 'label' AND entry_id IN ({marks})", [session_pk, *part])
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
    _delete_docs("session_id = %s", [session_pk])


def reindex_all() -> tuple[int, int]:
    """Rebuild every session's documents: (sessions, documents)."""
    sessions = documents = 0
    for pk in Session.objects.filter(staging__isnull=True).order_by("pk").values_list("pk", flat=True).iterator():
        with transaction.atomic():
            delete_session(pk)
            documents += index_session(pk)
        sessions += 1
    with transaction.atomic():
        _delete_docs("session_id NOT IN (SELECT id FROM sessions_app_session)", [])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE sessions_app_searchdoc")  # (store/search.py's plans need its statistics)
    return sessions, documents
