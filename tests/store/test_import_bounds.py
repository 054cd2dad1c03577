"""What an import may hold: the file is read a block at a time, what it stores outside its entries
is bounded, oversized parts are refused early (413)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions_app.core import piformat
from sessions_app.core.filesource import Source
from sessions_app.core.piformat import Limits, Line, Problem
from sessions_app.errors import ImportRejected, ImportTooLarge
from sessions_app.models import Entry, Session
from sessions_app.store.importing import pipeline
from tests.builders import chain, entry, header, jsonl, user
from tests.store.helpers import export_bytes

pytestmark = pytest.mark.django_db


def test_repeated_lines_over_the_bound_refuse_the_file_whole(alice, settings):
    settings.PIWEB_IMPORT_MAX_EXTRA_BYTES = 10_000
    head = jsonl(header("repeated"))
    data = jsonl(header("repeated"), *chain(3)) + head * (10_000 // len(head) + 2)
    for partial in (False, True):  # storing it cut short would lose bytes: refused either way
        with pytest.raises(ImportTooLarge) as caught:
            pipeline.session_import(owner=alice, data=data, partial=partial)
        assert caught.value.status == 413
        (problem,) = caught.value.extra["errors"]
        assert "outside entries" in problem["message"] and "10000 bytes" in problem["message"]
    assert Session.objects.count() == 0 and Entry.objects.count() == 0


def test_repeated_lines_under_the_bound_export_byte_for_byte(alice, settings):
    settings.PIWEB_IMPORT_MAX_EXTRA_BYTES = 10_000
    head = jsonl(header("repeated"))
    data = (
        jsonl(header("repeated"), *chain(3))
        + head * (9_000 // len(head))
        + jsonl(*chain(2, start=4, parent="e0000003"))
    )
    result = pipeline.session_import(owner=alice, data=data)
    assert result.added == 5
    assert export_bytes(Session.objects.get(pk=result.session.pk)) == data


def test_repeated_entry_lines_count_against_the_bound(alice, settings):
    settings.PIWEB_IMPORT_MAX_EXTRA_BYTES = 5_000
    lines = jsonl(*chain(2))
    with pytest.raises(ImportTooLarge):
        pipeline.session_import(owner=alice, data=jsonl(header("again")) + lines * 100)


@pytest.mark.parametrize("block", [64, 200, 4096])
def test_blocks_of_any_size_read_the_same_file(alice, generated, monkeypatch, block):
    """Lines cut by block boundaries, lines longer than a block: stored exactly, numbered right."""
    monkeypatch.setattr(piformat, "BLOCK", block)
    data = generated(300, seed=41, branch_prob=0.1, labels=5)
    result = pipeline.session_import(owner=alice, data=data, builder="process")
    assert result.added == 300
    assert export_bytes(result.session) == data


def test_a_line_over_the_limit_is_skipped_unread_and_the_next_lines_keep_their_numbers(monkeypatch):
    monkeypatch.setattr(piformat, "BLOCK", 256)
    big = entry("big", "e0000002", message=user("y" * 5000)["message"])
    data = jsonl(header(), *chain(2), big, *chain(2, start=3, parent="e0000002"))
    limits = Limits(max_line_bytes=1000)
    head, _ = piformat.read_header(data, limits)
    assert head is not None
    items = list(piformat.read_entries(data, head, limits))
    assert [type(i).__name__ for i in items] == ["Line", "Line", "Problem", "Line", "Line"]
    problem = items[2]
    assert isinstance(problem, Problem) and problem.line == 4 and problem.too_large
    assert [i.line for i in items if isinstance(i, Line)] == [2, 3, 5, 6]


def test_a_line_over_the_limit_is_refused_with_413(alice, settings):
    settings.PIWEB_IMPORT_MAX_LINE_BYTES = 1000
    big = entry("big", "e0000002", message=user("y" * 5000)["message"])
    with pytest.raises(ImportTooLarge) as caught:
        pipeline.session_import(owner=alice, data=jsonl(header(), *chain(2), big))
    assert caught.value.status == 413
    assert caught.value.extra["errors"][0]["line"] == 4


def test_a_mapped_file_is_read_a_block_at_a_time(alice, tmp_path: Path):
    """40 MB of lines: what the import allocates stays far below the file's size."""
    text = "z" * 100_000
    lines = [header("mapped")] + [
        entry(f"m{i:07d}", f"m{i - 1:07d}" if i else None, message=user(f"{i} {text}")["message"]) for i in range(400)
    ]
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl(*lines))
    size = path.stat().st_size
    assert size > 40_000_000
    source = Source.open(path)
    tracemalloc.start()
    try:
        result = pipeline.session_import(owner=alice, data=source, builder="process")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        source.close()
    assert result.added == 400
    assert peak < size / 2, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"
    assert export_bytes(result.session) == path.read_bytes()


def test_problems_are_capped_with_a_count_of_the_rest(alice):
    data = jsonl(header()) + b"not json\n" * 3000
    with pytest.raises(ImportRejected) as caught:
        pipeline.session_import(owner=alice, data=data)
    errors = caught.value.extra["errors"]
    assert len(errors) == 1001 and errors[0]["line"] == 2 and errors[999]["line"] == 1001
    assert errors[-1] == {"line": 0, "message": "and 2000 more problem(s), not listed"}
    assert caught.value.message.startswith("3000 problem(s)")


def test_an_upload_over_the_file_limit_is_refused_before_it_is_read(alice, settings):
    settings.PIWEB_IMPORT_MAX_FILE_BYTES = 1000
    client = Client()
    client.force_login(alice)
    upload = SimpleUploadedFile("big.jsonl", b"x" * (2 * 1024 * 1024), content_type="application/octet-stream")
    response = client.post("/api/sessions/import", {"file": upload})
    assert response.status_code == 413
    assert "over the limit" in response.json()["message"]
    again = SimpleUploadedFile("big.jsonl", b"x" * (2 * 1024 * 1024), content_type="application/octet-stream")
    page = client.post("/import/", {"files": again})
    assert page.status_code == 413
    assert Session.objects.count() == 0


def test_an_old_format_file_over_its_bound_is_refused(alice, settings):
    settings.PIWEB_IMPORT_MAX_LEGACY_BYTES = 1000  # (v1/v2 files are migrated whole, in memory)
    data = jsonl(header(version=2), *chain(20))
    with pytest.raises(ImportTooLarge) as caught:
        pipeline.session_import(owner=alice, data=data)
    assert "migrated whole" in caught.value.message or "migrated whole" in str(caught.value.extra["errors"])
    settings.PIWEB_IMPORT_MAX_LEGACY_BYTES = len(data)
    assert pipeline.session_import(owner=alice, data=data).added == 20


def test_a_file_of_more_entries_than_the_bound_is_refused(alice, settings):
    settings.PIWEB_IMPORT_MAX_ENTRIES = 10  # (what an import keeps per entry bounds its memory)
    with pytest.raises(ImportTooLarge) as caught:
        pipeline.session_import(owner=alice, data=jsonl(header(), *chain(11)), partial=True)
    assert caught.value.extra["errors"] == [{"line": 12, "message": "the file holds more than 10 entries, the limit"}]
    assert Session.objects.count() == 0
    assert pipeline.session_import(owner=alice, data=jsonl(header(), *chain(10))).added == 10


def test_the_bound_on_repeated_lines_holds_across_imports(alice, settings):
    settings.PIWEB_IMPORT_MAX_EXTRA_BYTES = 1000
    head = jsonl(header("grows"))
    data = jsonl(header("grows"), *chain(2)) + head * (700 // len(head))
    assert pipeline.session_import(owner=alice, data=data).added == 2
    grown = data + jsonl(*chain(1, start=3, parent="e0000002")) + head * (700 // len(head))
    with pytest.raises(ImportTooLarge):
        pipeline.session_import(owner=alice, data=grown)
    assert Session.objects.get().last_seq == 2
