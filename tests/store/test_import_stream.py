"""The import stores lines while it reads them; these tests pin down what that must not change."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from sessions_app.errors import ImportRejected
from sessions_app.models import Entry, Session
from sessions_app.store import selectors
from sessions_app.store.importing import pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def big_file(generated: Callable[..., bytes]) -> bytes:
    return generated(7000, seed=7, branch_prob=0.05, compactions=6, labels=30)


def _lines(data: bytes) -> list[bytes]:
    return data.rstrip(b"\n").split(b"\n")


def test_it_stores_a_big_file_exactly(alice, big_file):
    result = pipeline.session_import(owner=alice, data=big_file)
    assert result.added == 7000
    assert "".join(selectors.export_lines(session=result.session)).encode() == big_file
    seqs = list(Entry.objects.filter(session=result.session).values_list("seq", flat=True).order_by("seq"))
    assert seqs == list(range(1, 7001))


def test_a_bad_line_after_streamed_batches_stores_nothing(alice, big_file):
    lines = _lines(big_file)
    lines[6500] = b'{"type":"message","id":"broken"'
    with pytest.raises(ImportRejected) as caught:
        pipeline.session_import(owner=alice, data=b"\n".join(lines) + b"\n")
    assert caught.value.extra["errors"][0]["line"] == 6501
    assert Session.objects.count() == 0
    assert Entry.objects.count() == 0


def test_a_dangling_parent_late_in_the_file_stores_nothing_on_a_grown_session(alice, big_file):
    lines = _lines(big_file)
    first = b"\n".join(lines[:3000]) + b"\n"
    pipeline.session_import(owner=alice, data=first)
    grown = json.loads(lines[6000])
    grown["parentId"] = "nowhere0"
    lines[6000] = json.dumps(grown, separators=(",", ":"), ensure_ascii=False).encode()
    with pytest.raises(ImportRejected):
        pipeline.session_import(owner=alice, data=b"\n".join(lines) + b"\n")
    session = Session.objects.get()
    assert session.last_seq == 2999
    assert Entry.objects.count() == 2999
    assert session.source_bytes == len(first)


def test_children_before_their_parents_still_import(alice):
    header = {"type": "session", "version": 3, "id": "order-test", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}

    def msg(i: str, parent: str | None, text: str) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": text, "timestamp": 1767225601000}}  # fmt: skip

    rows = [header, msg("c", "b", "third"), msg("a", None, "first"), msg("b", "a", "second")]
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()
    result = pipeline.session_import(owner=alice, data=data)
    assert result.added == 3
    session = result.session
    assert session.leaf_id == "b"  # pi: the last line
    context = selectors.session_context(session=session, leaf_id="c")
    assert [m["content"] for m in context["messages"]] == ["first", "second", "third"]
    depths = dict(Entry.objects.filter(session=session).values_list("entry_id", "depth"))
    assert depths == {"a": 0, "b": 1, "c": 2}
    assert "".join(selectors.export_lines(session=session)).encode() == data


def test_a_grown_file_streams_only_its_tail(alice, big_file):
    lines = _lines(big_file)
    pipeline.session_import(owner=alice, data=b"\n".join(lines[:4000]) + b"\n")
    result = pipeline.session_import(owner=alice, data=big_file)
    assert (result.created, result.added) == (False, 3001)
    assert "".join(selectors.export_lines(session=result.session)).encode() == big_file
    leaf = result.session.leaf_id
    assert leaf == json.loads(lines[-1])["id"]
    full = Session.objects.get(pk=result.session.pk)
    assert selectors.session_context(session=full)["leafId"] == leaf


def test_a_changed_file_imported_again_records_no_second_copy_of_its_extra_header(alice):
    header = {"type": "session", "version": 3, "id": "dup-header", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}

    def msg(i: str, parent: str | None) -> str:
        return json.dumps({"type": "message", "id": i, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                           "message": {"role": "user", "content": i, "timestamp": 1767225601000}})  # fmt: skip

    head = json.dumps(header)
    broken = [head, msg("a", None), head, msg("b", "a"), '{"type": "message", "id": "c", "parentId": "b"']
    pipeline.session_import(owner=alice, data=("\n".join(broken) + "\n").encode(), partial=True)
    fixed = [*broken[:4], msg("c", "b")]
    result = pipeline.session_import(owner=alice, data=("\n".join(fixed) + "\n").encode())
    assert result.added == 1
    exported = "".join(selectors.export_lines(session=result.session)).splitlines()
    assert exported == fixed
