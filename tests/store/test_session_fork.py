"""session_fork: pi's createBranchedSession: the path to an entry without its label entries, with
the same ids and lines, then the path's resolved labels re-created as fresh label entries."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.errors import EntryNotFound
from sessions_app.models import Entry, Session
from sessions_app.store import selectors, services
from sessions_app.store.batches import IN_BATCH
from sessions_app.store.importing import pipeline
from tests.builders import HEX8, ISO_MS, assistant, chain, entry, header, jsonl, user
from tests.store.helpers import assert_tree, counts, keys, rows, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(alice):
    """u0 - a1 - [label u0 'start'] - u2 - a3, plus a side branch u0 - b1, labels on both."""
    session = services.session_create(owner=alice, cwd="/work/proj")
    u0 = services.entry_append(session=session, payload=user("u0"))
    services.entry_append(session=session, payload=assistant("a1"))
    services.label_set(session=session, target_id=u0.entry_id, label="start")
    services.entry_append(session=session, payload=user("u2"))
    a3 = services.entry_append(session=session, payload=assistant("a3"))
    services.leaf_move(session=session, entry_id=u0.entry_id)
    b1 = services.entry_append(session=session, payload=assistant("b1"))
    services.label_set(session=session, target_id=b1.entry_id, label="side")
    services.label_set(session=session, target_id=a3.entry_id, label="end")
    return session


def by_text(session: Session, text: str) -> Entry:
    for e in rows(session):
        data = json.loads(e.raw)
        if data["type"] == "message" and data["message"]["content"][0]["text"] == text:
            return e
    raise AssertionError(text)


def test_it_copies_the_path_minus_labels_with_the_same_lines(source, bob):
    u0, a1, u2, a3 = (by_text(source, t) for t in ("u0", "a1", "u2", "a3"))
    fork = services.session_fork(session=source, entry_id=a3.entry_id, owner=bob)
    copied = assert_tree(fork)[:4]  # a sound tree: no entry points at a dropped label
    assert [e.entry_id for e in copied] == [u0.entry_id, a1.entry_id, u2.entry_id, a3.entry_id]
    assert "label" not in {e.type for e in copied}
    # Lines are copied byte for byte...
    assert [copied[0].raw, copied[1].raw, copied[3].raw] == [u0.raw, a1.raw, a3.raw]
    # ...except u2, whose parent was the dropped label: re-chained to a1 as current pi does,
    # with its keys in the same order.
    assert u2.parent_id != a1.entry_id
    expected = json.loads(u2.raw)
    expected["parentId"] = a1.entry_id
    assert copied[2].raw == json.dumps(expected, separators=(",", ":"), ensure_ascii=False)
    assert copied[2].parent_id == a1.entry_id
    assert [e.depth for e in copied] == [0, 1, 2, 3]


def test_a_compaction_keeping_from_a_dropped_label_keeps_from_the_next_entry(alice):
    session = services.session_create(owner=alice)
    u0 = services.entry_append(session=session, payload=user("u0"))
    label = services.label_set(session=session, target_id=u0.entry_id, label="here")
    a1 = services.entry_append(session=session, payload=assistant("a1"))
    compaction = services.entry_append(
        session=session,
        payload={"type": "compaction", "summary": "S", "firstKeptEntryId": label.entry_id, "tokensBefore": 9},
    )
    u2 = services.entry_append(session=session, payload=user("u2"))
    fork = services.session_fork(session=session, entry_id=u2.entry_id, owner=alice)
    stored = {e.entry_id: e for e in assert_tree(fork)}
    data = json.loads(stored[compaction.entry_id].raw)
    assert data["firstKeptEntryId"] == a1.entry_id
    assert list(data) == list(json.loads(compaction.raw))
    assert stored[a1.entry_id].parent_id == u0.entry_id
    source_context = selectors.session_context(session=session, leaf_id=u2.entry_id)
    fork_context = selectors.session_context(session=fork, leaf_id=u2.entry_id)
    assert [m["role"] for m in source_context["messages"]] == ["compactionSummary", "assistant", "user"]
    assert fork_context == source_context


def test_labels_on_the_path_are_recreated_after_it_in_label_order(source, bob):
    u0, a3 = by_text(source, "u0"), by_text(source, "a3")
    fork = services.session_fork(session=source, entry_id=a3.entry_id, owner=bob)
    stored = assert_tree(fork, expected=6)
    new_labels = stored[4:]
    assert [e.type for e in new_labels] == ["label", "label"]
    first, second = (json.loads(e.raw) for e in new_labels)
    # Map order of the source: u0 was labelled before a3; 'side' targets an entry off the path.
    assert (first["targetId"], first["label"]) == (u0.entry_id, "start")
    assert (second["targetId"], second["label"]) == (a3.entry_id, "end")
    assert first["parentId"] == a3.entry_id  # chained after the last path entry
    assert second["parentId"] == first["id"]
    for e in new_labels:
        assert keys(e) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
        assert HEX8.match(e.entry_id)
        assert e.entry_id not in {x.entry_id for x in rows(source)}
        assert e.author == bob
    assert fork.leaf_id == second["id"]
    assert selectors.labels(session=fork) == {u0.entry_id: "start", a3.entry_id: "end"}
    # Each keeps the time its label was set (pi's labelTimestampsById), not the time of the fork.
    set_at = {json.loads(e.raw)["label"]: e.timestamp for e in rows(source) if e.type == "label"}
    assert (first["timestamp"], second["timestamp"]) == (set_at["start"], set_at["end"])


def test_cleared_labels_are_not_recreated(source, alice):
    u0, a3 = by_text(source, "u0"), by_text(source, "a3")
    services.label_set(session=source, target_id=u0.entry_id, label=None)
    fork = services.session_fork(session=source, entry_id=a3.entry_id, owner=alice)
    assert selectors.labels(session=fork) == {a3.entry_id: "end"}
    assert assert_tree(fork, expected=5)[-1].type == "label"


def test_labels_resolved_anywhere_in_the_file_are_recreated(source, alice):
    # u0's label entry sits after a1 and 'side' after b1, off this path: what counts is the
    # resolved label map of the whole session and whether the target is on the path.
    u0, a1 = by_text(source, "u0"), by_text(source, "a1")
    fork = services.session_fork(session=source, entry_id=a1.entry_id, owner=alice)
    stored = assert_tree(fork, expected=3)
    assert [e.entry_id for e in stored[:2]] == [u0.entry_id, a1.entry_id]
    assert fork.leaf_id == stored[2].entry_id
    assert selectors.labels(session=fork) == {u0.entry_id: "start"}


def test_a_fork_of_a_path_without_labels_ends_at_the_entry(alice):
    session = services.session_create(owner=alice)
    u0 = services.entry_append(session=session, payload=user("u0"))
    a1 = services.entry_append(session=session, payload=assistant("a1"))
    services.entry_append(session=session, payload=user("later"))
    fork = services.session_fork(session=session, entry_id=a1.entry_id, owner=alice)
    assert [e.raw for e in assert_tree(fork, expected=2)] == [u0.raw, a1.raw]
    assert fork.leaf_id == a1.entry_id


def test_the_fork_header_and_session_fields(source, bob):
    a3 = by_text(source, "a3")
    fork = services.session_fork(session=source, entry_id=a3.entry_id, owner=bob)
    fork = Session.objects.get(pk=fork.pk)
    header_obj = json.loads(fork.header_raw)
    assert list(header_obj) == ["type", "version", "id", "timestamp", "cwd"]
    assert header_obj["version"] == 3
    assert header_obj["cwd"] == "/work/proj"
    assert ISO_MS.match(header_obj["timestamp"])
    assert fork.public_id == header_obj["id"] != source.public_id
    assert "parentSession" not in header_obj  # the source was never a file
    assert fork.parent_session_id == source.pk
    assert fork.owner == bob
    assert fork.message_count == 4
    assert fork.first_message == "u0"


def test_the_header_names_the_source_file_when_there_is_one(alice):
    data = jsonl(header("fork-src"), entry("aa", None), entry("bb", "aa"))
    source = pipeline.session_import(owner=alice, data=data, source_path="/home/u/.pi/agent/s/x.jsonl").session
    fork = services.session_fork(session=source, entry_id="bb", owner=alice)
    header_obj = json.loads(fork.header_raw)
    assert list(header_obj) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header_obj["parentSession"] == "/home/u/.pi/agent/s/x.jsonl"
    assert fork.parent_session == source


def test_the_fork_context_equals_the_source_context_at_the_entry(source, alice):
    a3 = by_text(source, "a3")
    fork = services.session_fork(session=source, entry_id=a3.entry_id, owner=alice)
    expected = selectors.session_context(session=source, leaf_id=a3.entry_id)
    got = selectors.session_context(session=fork)
    assert got["messages"] == expected["messages"]
    assert (got["model"], got["thinkingLevel"]) == (expected["model"], expected["thinkingLevel"])


def test_forking_at_a_label_entry_keeps_the_path_before_it(source, alice):
    label = Entry.objects.get(session=source, type="label", raw__contains='"start"')
    fork = services.session_fork(session=source, entry_id=label.entry_id, owner=alice)
    stored = assert_tree(fork, expected=3)
    assert [e.type for e in stored] == ["message", "message", "label"]
    assert json.loads(stored[2].raw)["parentId"] == stored[1].entry_id


def test_the_source_is_untouched_and_the_fork_is_independent(source, alice):
    before = snapshot(source)
    leaf = Session.objects.get(pk=source.pk).leaf_id
    fork = services.session_fork(session=source, entry_id=by_text(source, "u2").entry_id, owner=alice)
    services.entry_append(session=fork, payload=assistant("only in the fork"))
    assert snapshot(source) == before
    assert Session.objects.get(pk=source.pk).leaf_id == leaf
    assert fork.leaf_id is not None
    again = services.session_fork(session=fork, entry_id=fork.leaf_id, owner=alice)
    assert again.parent_session == fork
    assert_tree(again, expected=len(assert_tree(fork)))


def test_an_unknown_entry_is_refused_and_nothing_is_created(source, alice):
    before = counts()
    with pytest.raises(EntryNotFound, match="Entry nope not found"):
        services.session_fork(session=source, entry_id="nope", owner=alice)
    assert counts() == before


def test_a_fork_exports_and_reimports_unchanged(source, bob):
    from tests.store.helpers import export_bytes

    fork = services.session_fork(session=source, entry_id=by_text(source, "a3").entry_id, owner=bob)
    exported = export_bytes(fork)
    services.session_delete(session=fork)
    again = pipeline.session_import(owner=bob, data=exported).session
    assert export_bytes(again) == exported


def test_a_path_longer_than_an_in_batch_is_read_in_batches(alice):
    entries = chain(IN_BATCH + 5)
    source = pipeline.session_import(owner=alice, data=jsonl(header("long"), *entries)).session
    with CaptureQueriesContext(connection) as queries:
        fork = services.session_fork(session=source, entry_id=entries[-1]["id"], owner=alice)
    assert [e.raw for e in assert_tree(fork, expected=IN_BATCH + 5)] == [e.raw for e in rows(source)]
    raws = [
        q["sql"] for q in queries.captured_queries if '"entry_id" AS "entry_id", "sessions_app_entry"."raw"' in q["sql"]
    ]
    assert [q.count("'e0") for q in raws] == [IN_BATCH, 5]  # the path's ids, one IN list per batch
