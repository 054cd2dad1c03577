"""A new session's index rows come from the import's own parse (worker.Job.search), written with
its batches: they must be exactly what reading the stored entries again gives (reindex_search),
across batches, labels included, whoever builds the rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from sessions_app.models import SearchDoc
from sessions_app.store import search, search_index
from sessions_app.store.importing import pipeline, worker
from tests.builders import chain, entry, header, jsonl

pytestmark = pytest.mark.django_db


def _file() -> bytes:
    """2,500 messages, with labels set in the worker's first batch and replaced or cleared in a
    later one (worker.FIRST_BATCH, worker.BATCH)."""
    lines: list[dict[str, Any]] = chain(2500)
    parent = lines[99]["id"]
    early = [
        entry("l1", parent, "label", targetId="e0000005", label="alphalabel"),
        entry("l2", "l1", "label", targetId="e0000006", label="betalabel"),
    ]
    lines[100]["parentId"] = "l2"
    late = [
        entry("l3", lines[2299]["id"], "label", targetId="e0000005", label="gammalabel"),
        entry("l4", "l3", "label", targetId="e0000006"),  # cleared
    ]
    lines[2300]["parentId"] = "l4"
    ordered = lines[:100] + early + lines[100:2300] + late + lines[2300:]
    return jsonl(header("import-index"), *ordered)


def _docs(session_pk: int) -> list[tuple[Any, ...]]:
    fields = ("seq", "entry_id", "kind", "role", "tool", "model", "ts_ms", "text")
    return sorted(SearchDoc.objects.filter(session_id=session_pk).values_list(*fields))


@pytest.mark.parametrize("builder", ["worker", "process"])
def test_an_import_indexes_from_its_own_parse_as_a_reindex_would(alice, builder, monkeypatch):
    reread: list[int] = []
    real = search_index._write

    def write(session_pk: int, found: list[tuple[Any, ...]]) -> int:
        reread.append(len(found))
        return real(session_pk, found)

    monkeypatch.setattr(search_index, "_write", write)
    result = pipeline.session_import(owner=alice, data=_file(), builder=builder)
    assert result.built_by == builder
    assert reread == []  # nothing was read again to index it
    imported = _docs(result.session.pk)
    assert len(imported) == 2501  # the messages, and the one label in force

    search_index.reindex_all()
    assert _docs(result.session.pk) == imported
    labels = {(d[1], d[7]) for d in imported if d[2] == "label"}
    assert labels == {("e0000005", "gammalabel")}  # the last label wins; a cleared one is gone
    found = {h.entry_id for h in search.search(user=alice, q="gammalabel").hits}
    assert found == {"e0000005"}
    assert search.search(user=alice, q="alphalabel").hits == []
    assert search.search(user=alice, q="betalabel").hits == []


def test_a_batch_holds_the_entries_kept_for_their_documents_to_a_size(alice, monkeypatch):
    """The entries' data is held until their batch's documents are built: a batch ends once
    their lines take worker.BATCH_BYTES, so memory stays bounded on a file of huge lines."""
    monkeypatch.setattr(worker, "BATCH_BYTES", 5_000)
    sizes: list[int] = []
    real = search_index.write_rows

    def write_rows(session_pk: int, rows: list[Any], targets: list[str]) -> int:
        sizes.append(len(rows))
        return real(session_pk, rows, targets)

    monkeypatch.setattr(search_index, "write_rows", write_rows)
    result = pipeline.session_import(owner=alice, data=_file(), builder="process")
    assert max(sizes) < 100 and len(_docs(result.session.pk)) == 2501  # (two labels written, then replaced)


def test_a_search_during_an_import_finds_nothing_of_it_yet(alice):
    """The documents are written with the staging batches: no reader sees them before the
    session is published (they belong to the staging session, which no search reads)."""
    seen: list[int] = []
    written: list[int] = []

    def progress(_: int) -> None:
        written.append(SearchDoc.objects.count())
        seen.append(len(search.search(user=alice, q="text").hits))

    pipeline.session_import(owner=alice, data=_file(), builder="process", progress=progress)
    assert max(written) > 0 and seen and max(seen) == 0
    assert len(search.search(user=alice, q="text").hits) == 20


@pytest.mark.django_db(transaction=True)
def test_the_index_is_kept_for_large_imports_on_either_database(alice, generated):
    """SQLite (migration 0016): FTS5 merges its segments at automerge 16, not 4: each import batch
    adds a segment, and merging them at the default cost a third of what indexing adds to an import.
    PostgreSQL: a large import renews the index's planner statistics; without them a common word's
    newest hits are found through a bitmap of all its matches (1.4 s on the 1M corpus, not 5 ms)."""
    pipeline.session_import(owner=alice, data=generated(pipeline.ANALYZE_AFTER + 100, 3))
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT v FROM sessions_app_search_fts_config WHERE k = 'automerge'")
            assert cursor.fetchone() == (16,)
        else:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'sessions_app_searchdoc'")
            assert cursor.fetchone()[0] > pipeline.ANALYZE_AFTER / 2
    assert SearchDoc.objects.count() > pipeline.ANALYZE_AFTER  # and the import was indexed
