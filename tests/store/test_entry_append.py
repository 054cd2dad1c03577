"""entry_append: pi's appendX: a child of the leaf (or of an explicit parent), leaf moves to it."""

from __future__ import annotations

import json

import pytest

from sessions_app.errors import EntryNotFound, InvalidEntry, SessionConflict
from sessions_app.models import Entry
from sessions_app.store import selectors, services
from tests.builders import HEX8, ISO_MS, assistant, user
from tests.store.helpers import assert_tree, counts, keys, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    return services.session_create(owner=alice)


def test_the_first_entry_is_a_root(session, alice):
    entry = services.entry_append(session=session, payload=user("hi"), author=alice)
    data = json.loads(entry.raw)
    assert data["parentId"] is None
    assert entry.parent_id is None
    assert entry.seq == 1
    assert entry.depth == 0
    assert HEX8.match(entry.entry_id)
    assert ISO_MS.match(data["timestamp"])
    assert entry.author == alice
    assert session.leaf_id == entry.entry_id
    assert session.last_seq == 1


def test_it_appends_as_a_child_of_the_leaf(session):
    first = services.entry_append(session=session, payload=user("one"))
    second = services.entry_append(session=session, payload=assistant("two"))
    third = services.entry_append(session=session, payload=user("three"))
    assert second.parent_id == first.entry_id
    assert third.parent_id == second.entry_id
    assert [e.depth for e in (first, second, third)] == [0, 1, 2]
    assert session.leaf_id == third.entry_id
    assert_tree(session, expected=3)


def test_it_appends_under_an_explicit_parent_and_moves_the_leaf(session):
    root = services.entry_append(session=session, payload=user("root"))
    services.entry_append(session=session, payload=assistant("a"))
    branch = services.entry_append(session=session, payload=assistant("b"), parent_id=root.entry_id)
    assert branch.parent_id == root.entry_id
    assert session.leaf_id == branch.entry_id
    assert [c.entry_id for c in selectors.children(session=session, entry_id=root.entry_id)] == [
        e.entry_id for e in Entry.objects.filter(session=session, parent_id=root.entry_id).order_by("seq")
    ]
    assert Entry.objects.filter(session=session, parent_id=root.entry_id).count() == 2


def test_parent_none_starts_a_new_root(session):
    services.entry_append(session=session, payload=user("first root"))
    services.entry_append(session=session, payload=assistant("reply"))
    second_root = services.entry_append(session=session, payload=user("second root"), parent_id=None)
    assert second_root.parent_id is None
    assert json.loads(second_root.raw)["parentId"] is None
    assert second_root.depth == 0
    assert Entry.objects.filter(session=session, parent_id=None).count() == 2
    assert session.leaf_id == second_root.entry_id
    assert_tree(session, expected=3)


def test_move_leaf_false_keeps_the_leaf(session):
    first = services.entry_append(session=session, payload=user("one"))
    side = services.entry_append(session=session, payload=assistant("side"), move_leaf=False)
    assert side.parent_id == first.entry_id
    assert session.leaf_id == first.entry_id
    session.refresh_from_db()
    assert session.leaf_id == first.entry_id


def test_ids_are_8_hex_and_unique_and_seq_is_dense(session):
    made: list[Entry] = []
    for i in range(60):
        parent = made[i // 2].entry_id if i % 3 == 0 and made else services.UNSET
        made.append(services.entry_append(session=session, payload=user(f"m{i}"), parent_id=parent))
    ids = [e.entry_id for e in made]
    assert all(HEX8.match(i) for i in ids)
    assert len(set(ids)) == 60
    assert [e.seq for e in made] == list(range(1, 61))
    assert_tree(session, expected=60)


def test_an_unknown_parent_is_refused_and_nothing_is_stored(session):
    services.entry_append(session=session, payload=user("one"))
    before, leaf = counts(), session.leaf_id
    with pytest.raises(EntryNotFound, match="Entry nope not found"):
        services.entry_append(session=session, payload=user("x"), parent_id="nope")
    assert counts() == before
    session.refresh_from_db()
    assert session.leaf_id == leaf
    assert session.last_seq == 1


def test_a_parent_from_another_session_is_unknown(session, alice):
    other = services.session_create(owner=alice)
    foreign = services.entry_append(session=other, payload=user("elsewhere"))
    with pytest.raises(EntryNotFound):
        services.entry_append(session=session, payload=user("x"), parent_id=foreign.entry_id)


def test_a_given_id_and_timestamp_are_used(session):
    entry = services.entry_append(
        session=session, payload={**user("x"), "id": "my-id", "timestamp": "2025-01-02T03:04:05.678Z"}
    )
    data = json.loads(entry.raw)
    assert (data["id"], data["timestamp"]) == ("my-id", "2025-01-02T03:04:05.678Z")
    assert entry.ts_ms == 1735787045678
    with pytest.raises(SessionConflict):
        services.entry_append(session=session, payload={**user("again"), "id": "my-id"})
    assert_tree(session, expected=1)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"type": "message"}, "'message' is missing"),
        ({"type": "message", "message": {"role": 5, "content": "x"}}, "message.role"),
        ({"type": "message", "message": {"role": "user", "content": 5}}, "message.content"),
        ({"type": "compaction", "summary": "s", "tokensBefore": "12"}, "tokensBefore"),
        ({"type": "model_change", "provider": "p"}, "modelId"),
        ({"type": "label"}, "targetId"),
        ({"type": "custom_message", "customType": "x", "content": "c"}, "display"),
        ({"type": ""}, "type"),
        ({"type": "message", "message": user("x")["message"], "id": ""}, "id"),
        ({"type": "message", "message": user("x")["message"], "timestamp": "yesterday"}, "timestamp"),
    ],
)
def test_malformed_payloads_are_refused(session, payload, message):
    services.entry_append(session=session, payload=user("one"))
    before = snapshot(session)
    with pytest.raises(InvalidEntry, match=message):
        services.entry_append(session=session, payload=payload)
    assert snapshot(session) == before


def test_a_too_deep_payload_is_refused(session, settings):
    settings.PIWEB_IMPORT_MAX_DEPTH = 50
    nested: object = "bottom"
    for _ in range(100):
        nested = [nested]
    with pytest.raises(InvalidEntry, match="deeper than 50"):
        services.entry_append(session=session, payload={"type": "custom", "customType": "x", "data": nested})
    assert not Entry.objects.filter(session=session).exists()


# Keys given in a scrambled order on purpose: the stored line must follow pi (spec section 6).
KEY_ORDERS = [
    ({"message": user("x")["message"], "type": "message"}, ["type", "id", "parentId", "timestamp", "message"]),
    (
        {"thinkingLevel": "high", "type": "thinking_level_change"},
        ["type", "id", "parentId", "timestamp", "thinkingLevel"],
    ),
    (
        {"modelId": "gpt-5", "provider": "openai", "type": "model_change"},
        ["type", "id", "parentId", "timestamp", "provider", "modelId"],
    ),
    (
        {
            "fromHook": False,
            "details": {"readFiles": []},
            "tokensBefore": 10,
            "firstKeptEntryId": "ROOT",
            "summary": "s",
            "type": "compaction",
        },
        ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook"],
    ),
    (
        {"tokensBefore": 10, "summary": "s", "type": "compaction"},
        ["type", "id", "parentId", "timestamp", "summary", "tokensBefore"],
    ),
    (
        {"fromHook": True, "summary": "s", "details": {}, "fromId": "ROOT", "type": "branch_summary"},
        ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"],
    ),
    (
        {"data": {"k": 1}, "customType": "ext", "type": "custom"},
        ["type", "customType", "data", "id", "parentId", "timestamp"],
    ),
    ({"customType": "ext", "type": "custom"}, ["type", "customType", "id", "parentId", "timestamp"]),
    (
        {"details": {"x": 1}, "display": True, "content": "hi", "customType": "ext", "type": "custom_message"},
        ["type", "customType", "content", "display", "details", "id", "parentId", "timestamp"],
    ),
    ({"label": "L", "targetId": "ROOT", "type": "label"}, ["type", "id", "parentId", "timestamp", "targetId", "label"]),
    ({"targetId": "ROOT", "type": "label"}, ["type", "id", "parentId", "timestamp", "targetId"]),
    ({"name": "n", "type": "session_info"}, ["type", "id", "parentId", "timestamp", "name"]),
    # Keys pi does not know are kept, after its own.
    (
        {"zeta": 1, "message": user("x")["message"], "alpha": 2, "type": "message"},
        ["type", "id", "parentId", "timestamp", "message", "zeta", "alpha"],
    ),
    ({"b": 1, "a": 2, "type": "future_kind"}, ["type", "id", "parentId", "timestamp", "b", "a"]),
]


@pytest.mark.parametrize(("payload", "order"), KEY_ORDERS)
def test_created_entries_follow_pis_key_order(session, payload, order):
    root = services.entry_append(session=session, payload=user("root"))
    payload = {k: (root.entry_id if v == "ROOT" else v) for k, v in payload.items()}
    entry = services.entry_append(session=session, payload=payload)
    assert keys(entry) == order
    # Compact JSON exactly as JSON.stringify writes it.
    assert entry.raw == json.dumps(json.loads(entry.raw), separators=(",", ":"), ensure_ascii=False)


def test_the_stored_line_keeps_unicode_raw_and_js_numbers(session):
    entry = services.entry_append(
        session=session, payload={"type": "custom", "customType": "x", "data": {"t": "héllo ✓", "n": 5.0, "f": 9e-06}}
    )
    assert '"t":"héllo ✓"' in entry.raw
    assert '"n":5,' in entry.raw
    assert '"f":0.000009' in entry.raw


def test_listing_fields_follow_messages(session):
    services.entry_append(session=session, payload=user("first question", ts=1000))
    services.entry_append(session=session, payload=assistant("answer", ts=5000))
    services.entry_append(session=session, payload={"type": "thinking_level_change", "thinkingLevel": "low"})
    services.entry_append(session=session, payload=user("second question", ts=3000))
    session.refresh_from_db()
    assert session.message_count == 3
    assert session.first_message == "first question"
    assert session.modified_ms == 5000


def test_context_follows_the_appended_path(session):
    services.entry_append(session=session, payload={"type": "model_change", "provider": "openai", "modelId": "gpt-5"})
    services.entry_append(session=session, payload={"type": "thinking_level_change", "thinkingLevel": "high"})
    question = services.entry_append(session=session, payload=user("q"))
    services.entry_append(session=session, payload=assistant("a"))
    context = selectors.session_context(session=session)
    assert context["leafId"] == session.leaf_id
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    assert context["thinkingLevel"] == "high"
    assert context["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    at_question = selectors.session_context(session=session, leaf_id=question.entry_id)
    assert at_question["model"] == {"provider": "openai", "modelId": "gpt-5"}
    assert [m["role"] for m in at_question["messages"]] == ["user"]
