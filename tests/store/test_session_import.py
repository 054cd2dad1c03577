"""session_import: pi files in, byte for byte; v1/v2 migrated as pi does; re-imports idempotent."""

from __future__ import annotations

import json

import pytest

from sessions_app.core.context import build_session_context
from sessions_app.core.tree import leaf_after_load
from sessions_app.models import Entry, Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import HEX8, SESSION_ID, assistant, chain, entry, header, jsonl, user
from tests.paths import LARGE_SESSION
from tests.store.helpers import assert_tree, counts, export_bytes, nodes, rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched():
    """A v3 file with two branches, a label, a session name and a model change."""
    return jsonl(
        header(),
        entry("m0000001", None, "model_change", provider="anthropic", modelId="claude-sonnet-4-5"),
        entry("t0000002", "m0000001", "thinking_level_change", thinkingLevel="high"),
        entry("u0000003", "t0000002", message=user("first", ts=1765235000000)["message"]),
        entry("a0000004", "u0000003", message=assistant("reply", ts=1765235001000)["message"]),
        entry("u0000005", "a0000004", timestamp="2025-12-08T23:24:00.000Z", message=user("left")["message"]),
        entry("u0000006", "a0000004", timestamp="2025-12-08T23:25:00.000Z", message=user("right")["message"]),
        entry("l0000007", "u0000006", "label", targetId="u0000005", label="abandoned"),
        entry("s0000008", "l0000007", "session_info", name="  Imported  "),
    )


def test_it_stores_every_line_exactly(alice, branched):
    result = pipeline.session_import(owner=alice, data=branched, source_path="/p/s.jsonl")
    assert (result.created, result.added, result.skipped, result.version) == (True, 8, [], 3)
    session = result.session
    lines = branched.decode().splitlines()
    assert session.header_raw == lines[0]
    assert [e.raw for e in assert_tree(session, expected=8)] == lines[1:]
    assert export_bytes(session) == branched
    assert session.public_id == SESSION_ID
    assert (session.cwd, session.created, session.source_path) == (
        "/home/u/proj",
        "2025-12-08T23:22:54.411Z",
        "/p/s.jsonl",
    )
    assert session.owner == alice
    assert all(e.author == alice for e in rows(session))


def test_the_leaf_is_the_last_line_as_pi_loads_it(alice, branched):
    session = pipeline.session_import(owner=alice, data=branched).session
    assert session.leaf_id == "s0000008"
    assert session.leaf_id == leaf_after_load(nodes(session))


def test_listing_and_labels_and_context_follow_pi(alice, branched):
    session = Session.objects.get(pk=pipeline.session_import(owner=alice, data=branched).session.pk)
    assert session.name == "Imported"
    assert session.message_count == 4
    assert session.first_message == "first"
    assert session.modified_ms == 1765235001000
    assert selectors.labels(session=session) == {"u0000005": "abandoned"}
    expected = build_session_context(nodes(session), session.leaf_id)
    assert selectors.session_context(session=session) == {"leafId": "s0000008", **expected}
    assert [m["content"][0]["text"] for m in expected["messages"]] == ["first", "reply", "right"]
    assert expected["thinkingLevel"] == "high"


def test_a_v1_file_is_migrated_into_one_chain(alice):
    data = LARGE_SESSION.read_bytes()
    result = pipeline.session_import(owner=alice, data=data)
    assert (result.created, result.added, result.version) == (True, 1018, 1)
    session = result.session
    stored = assert_tree(session, expected=1018)
    assert all(HEX8.match(e.entry_id) for e in stored)
    assert [e.parent_id for e in stored[1:]] == [e.entry_id for e in stored[:-1]]
    assert stored[0].parent_id is None
    assert [e.depth for e in stored] == list(range(1018))
    header_obj = json.loads(session.header_raw)
    # pi's migration appends version at the end of the header, keeping the legacy keys.
    assert list(header_obj) == ["type", "id", "timestamp", "cwd", "provider", "modelId", "thinkingLevel", "version"]
    assert header_obj["version"] == 3
    first = json.loads(stored[0].raw)
    assert list(first)[-2:] == ["id", "parentId"]  # appended after the original keys
    context = selectors.session_context(session=session)
    assert len(context["messages"]) == 914
    assert context["thinkingLevel"] == "off"
    assert context["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    # Deterministic ids: importing the file again adds nothing.
    again = pipeline.session_import(owner=alice, data=data)
    assert (again.created, again.added) == (False, 0)
    assert_tree(session, expected=1018)


def test_a_v1_compaction_gets_its_first_kept_entry_id(alice):
    data = jsonl(
        header(version=None),
        {"type": "message", "timestamp": "2025-12-08T23:23:00.000Z", "message": user("one")["message"]},
        {"type": "message", "timestamp": "2025-12-08T23:23:01.000Z", "message": assistant("two")["message"]},
        {
            "type": "compaction",
            "timestamp": "2025-12-08T23:23:02.000Z",
            "summary": "S",
            "tokensBefore": 5,
            "firstKeptEntryIndex": 2,
        },
        {"type": "message", "timestamp": "2025-12-08T23:23:03.000Z", "message": user("three")["message"]},
    )
    session = pipeline.session_import(owner=alice, data=data).session
    stored = assert_tree(session, expected=4)
    compaction = json.loads(stored[2].raw)
    assert list(compaction) == ["type", "timestamp", "summary", "tokensBefore", "id", "parentId", "firstKeptEntryId"]
    assert compaction["firstKeptEntryId"] == stored[1].entry_id  # index 2 counts the header
    messages = selectors.session_context(session=session)["messages"]
    assert [m["role"] for m in messages] == ["compactionSummary", "assistant", "user"]


def test_a_v2_hook_message_becomes_custom(alice):
    data = jsonl(
        header(version=2),
        entry(
            "h1",
            None,
            message={"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1},
        ),
    )
    session = pipeline.session_import(owner=alice, data=data).session
    (stored,) = assert_tree(session, expected=1)
    assert json.loads(stored.raw)["message"]["role"] == "custom"
    assert json.loads(session.header_raw)["version"] == 3


def test_unknown_types_and_keys_are_kept_verbatim(alice):
    odd = b'{"type":"future_kind","id":"f1","parentId":null,"timestamp":"2025-12-08T23:23:00.000Z",'
    odd += b'"z":1,"a":{"9":1,"1":2}}'
    msg = entry("m2", "f1", message={**user("x")["message"], "extraKey": [1.5e-7, 1e21]})
    data = jsonl(header(), odd, msg)
    session = pipeline.session_import(owner=alice, data=data).session
    assert export_bytes(session) == data
    assert rows(session)[0].raw == odd.decode()


def test_blank_lines_and_a_missing_final_newline_are_fine(alice):
    body = jsonl(header(), *chain(3))
    data = body.replace(b"\n", b"\n\n", 1).rstrip(b"\n")
    session = pipeline.session_import(owner=alice, data=data).session
    assert_tree(session, expected=3)
    assert session.leaf_id == "e0000003"


def test_reimporting_the_same_file_adds_nothing(alice, branched):
    first = pipeline.session_import(owner=alice, data=branched)
    services.leaf_move(session=first.session, entry_id="u0000005")
    before = counts()
    again = pipeline.session_import(owner=alice, data=branched)
    assert (again.created, again.added, again.skipped) == (False, 0, [])
    assert again.session.pk == first.session.pk
    assert counts() == before
    assert Session.objects.get(pk=first.session.pk).leaf_id == "u0000005"  # nothing new: leaf stays


def test_a_grown_file_adds_only_the_new_lines_and_moves_the_leaf(alice, branched):
    session = pipeline.session_import(owner=alice, data=branched).session
    services.leaf_move(session=session, entry_id="u0000005")
    grown = branched + jsonl(
        entry("a0000009", "u0000005", message=assistant("more")["message"]),
        entry("u0000010", "a0000009", message=user("and more")["message"]),
    )
    result = pipeline.session_import(owner=alice, data=grown)
    assert (result.created, result.added) == (False, 2)
    session = Session.objects.get(pk=session.pk)
    assert session.leaf_id == "u0000010"
    assert [e.seq for e in assert_tree(session, expected=10)][-2:] == [9, 10]
    assert export_bytes(session) == grown
    assert session.source_bytes == len(grown)


def test_a_file_grown_after_piweb_appended_keeps_both(alice, branched):
    session = pipeline.session_import(owner=alice, data=branched).session
    mine = services.entry_append(session=session, payload=user("written in piweb"))
    grown = branched + jsonl(entry("x0000009", "s0000008", message=assistant("written by pi")["message"]))
    result = pipeline.session_import(owner=alice, data=grown)
    assert result.added == 1
    stored = assert_tree(session, expected=10)
    assert [e.entry_id for e in stored[-2:]] == [mine.entry_id, "x0000009"]
    assert Session.objects.get(pk=session.pk).leaf_id == "x0000009"


def test_another_users_session_id_gives_a_new_server_id(alice, bob, branched):
    """pi's id held by alice: bob's import is his own session under a new id, pi's id its source id;
    alice's session is untouched, and bob's re-import finds his by pi's id."""
    alices = pipeline.session_import(owner=alice, data=branched).session
    before = Entry.objects.filter(session=alices).count()
    result = pipeline.session_import(owner=bob, data=branched)
    bobs = result.session
    assert result.created and result.added == before
    assert bobs.pk != alices.pk and bobs.public_id != alices.public_id
    assert (bobs.owner_id, bobs.source_id) == (bob.pk, alices.public_id)
    assert "".join(selectors.export_lines(session=bobs)).encode() == branched
    assert Entry.objects.filter(session=alices).count() == before
    again = pipeline.session_import(owner=bob, data=branched)
    assert (again.session.pk, again.created, again.added) == (bobs.pk, False, 0)
    assert Session.objects.filter(source_id=alices.public_id).count() == 2


def test_entries_of_a_file_never_leak_into_another_session(alice, branched):
    pipeline.session_import(owner=alice, data=branched)
    other = jsonl(header("other-session"), *chain(2))
    session = pipeline.session_import(owner=alice, data=other).session
    assert_tree(session, expected=2)
    assert Entry.objects.count() == 10
