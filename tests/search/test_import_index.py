"""An import publishes its entries, then indexes them (store/search_index.py): before it returns
for a small file, by a thread of its own for a large one, the session "indexing…" meanwhile. The
documents must be exactly what reading the stored entries again gives (reindex_search), across
batches, labels included, whoever builds the rows, however many indexers share the work."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from sessions_app.models import SearchDoc, Session
from sessions_app.store import search, search_index, services
from sessions_app.store.importing import pipeline
from tests.builders import chain, entry, header, jsonl, user

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
def test_an_import_indexes_its_entries_as_a_reindex_would(alice, builder):
    result = pipeline.session_import(owner=alice, data=_file(), builder=builder)
    assert result.built_by == builder
    result.session.refresh_from_db()
    assert result.session.indexed_seq is None  # a small file: searchable when the import returns
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


def test_indexing_reads_the_entries_in_batches_bounded_by_their_size(alice, monkeypatch):
    """Memory stays bounded on a file of huge lines: a batch is sized by the lines read so far."""
    monkeypatch.setattr(search_index, "BATCH_BYTES", 5_000)
    sizes: list[int] = []
    real = search_index._write

    def write(session_pk: int, found: list[tuple[Any, ...]]) -> int:
        sizes.append(len(found))
        return real(session_pk, found)

    monkeypatch.setattr(search_index, "_write", write)
    result = pipeline.session_import(owner=alice, data=_file(), builder="process")
    assert max(sizes) < 100 and len(sizes) > 25 and len(_docs(result.session.pk)) == 2501


def test_a_search_during_an_import_finds_nothing_of_it_yet(alice):
    """Nothing is indexed before the session is published: no reader sees a staging session."""
    seen: list[int] = []
    written: list[int] = []

    def progress(_: int) -> None:
        written.append(SearchDoc.objects.count())
        seen.append(len(search.search(user=alice, q="text").hits))

    pipeline.session_import(owner=alice, data=_file(), builder="process", progress=progress)
    assert written and max(written) == 0 and max(seen) == 0
    assert len(search.search(user=alice, q="text").hits) == 20


@pytest.mark.django_db(transaction=True)
def test_a_large_import_is_readable_first_and_says_indexing_until_it_is_searchable(alice, settings, monkeypatch):
    settings.PIWEB_SEARCH_INDEX_INLINE_ENTRIES = 100
    started: list[int] = []
    monkeypatch.setattr(search_index, "_start", started.append)  # the indexer thread held back
    result = pipeline.session_import(owner=alice, data=_file(), builder="process")
    session = Session.objects.get(pk=result.session.pk)
    assert started == [session.pk] and session.indexed_seq == 0 and session.last_seq == 2504
    assert SearchDoc.objects.filter(session_id=session.pk).count() == 0

    client = Client()
    client.force_login(alice)
    body = client.get("/api/search", {"q": "gammalabel"}).json()
    assert body["hits"] == [] and body["indexing"] == [{"sessionId": session.public_id, "sessionName": ""}]
    page = client.get("/search/", {"q": "gammalabel"}).content.decode()
    assert "data-search-indexing" in page and session.public_id in page
    assert "data-indexing" in client.get(f"/sessions/{session.public_id}/").content.decode()
    assert "data-indexing" in client.get("/").content.decode()

    # An append meanwhile is left to the backlog's indexer (indexing it alone would skip the rest).
    appended = services.entry_append(
        session=session, payload=user("a zqappendedword question", 1_767_600_000_000), author=alice
    )
    assert SearchDoc.objects.filter(session_id=session.pk).count() == 0

    monkeypatch.undo()  # the janitor starts the indexer again (its process stopped, say)
    assert search_index.resume_pending() == 1
    assert search_index.wait_for_indexers()
    assert Session.objects.get(pk=session.pk).indexed_seq is None
    body = client.get("/api/search", {"q": "zqappendedword"}).json()
    assert [h["entryId"] for h in body["hits"]] == [appended.entry_id] and "indexing" not in body
    assert "data-indexing" not in client.get(f"/sessions/{session.public_id}/").content.decode()
    indexed = _docs(session.pk)
    search_index.reindex_all()
    assert _docs(session.pk) == indexed  # each entry indexed once, the append's included


@pytest.mark.django_db(transaction=True)
def test_two_indexers_of_one_session_share_the_work_and_index_nothing_twice(alice):
    result = pipeline.session_import(owner=alice, data=_file(), builder="process")
    expected = _docs(result.session.pk)
    search_index.delete_session(result.session.pk)
    Session.objects.filter(pk=result.session.pk).update(indexed_seq=0)
    counts: list[int] = []

    def index() -> None:
        try:
            counts.append(search_index.catch_up(result.session.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=index) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(counts) == 2 and _docs(result.session.pk) == expected  # (two labels written, then replaced)


@pytest.mark.django_db(transaction=True)
def test_a_catch_up_stops_when_its_session_is_deleted(alice):
    result = pipeline.session_import(owner=alice, data=_file(), builder="process")
    Session.objects.filter(pk=result.session.pk).update(indexed_seq=0)
    services.session_delete(session=Session.objects.get(pk=result.session.pk))
    assert search_index.catch_up(result.session.pk) == 0
    assert not SearchDoc.objects.filter(session_id=result.session.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_the_index_is_kept_for_large_imports_on_either_database(alice, generated):
    """SQLite (migration 0016): FTS5 merges its segments at automerge 16, not 4: each import batch
    adds a segment, and merging them at the default cost a third of what indexing adds to an import.
    PostgreSQL: a large import renews the index's planner statistics; without them a common word's
    newest hits are found through a bitmap of all its matches (1.4 s on the 1M corpus, not 5 ms)."""
    pipeline.session_import(owner=alice, data=generated(pipeline.ANALYZE_AFTER + 100, 3))
    assert search_index.wait_for_indexers()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT v FROM sessions_app_search_fts_config WHERE k = 'automerge'")
            assert cursor.fetchone() == (16,)
        else:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'sessions_app_searchdoc'")
            assert cursor.fetchone()[0] > pipeline.ANALYZE_AFTER / 2
    assert SearchDoc.objects.count() > pipeline.ANALYZE_AFTER  # and the import was indexed


def test_a_batch_finds_the_labels_it_replaces_through_their_index(alice):
    """Each indexed batch deletes the label documents of the targets it labels: by the partial
    index of label documents (migration 0022), not by reading every document of the session."""
    select = f"SELECT id FROM sessions_app_searchdoc WHERE {search_index.labels_of(3)}"
    params: list[Any] = [1, "a", "b", "c"]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {select}", params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
        else:
            cursor.execute("SET LOCAL enable_seqscan = off")  # (an empty table: what it could use, not what it would)
            cursor.execute(f"EXPLAIN {select}", params)
            plan = " ".join(row[0] for row in cursor.fetchall())
    assert "searchdoc_label_target" in plan, plan
