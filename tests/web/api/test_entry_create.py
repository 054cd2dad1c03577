"""POST /api/sessions/{id}/entries: append an entry in pi's shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app.models import Entry
from tests.builders import assistant, user
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def post(client, session_id: str, body):
    return client.post(url(session_id, "/entries"), body, content_type="application/json")


def stored(session, entry_id: str) -> Any:
    return json.loads(Entry.objects.get(session=session, entry_id=entry_id).raw)


def test_append_to_the_leaf(alice, alice_client, alice_session):
    old_leaf = alice_session.leaf_id
    response = post(alice_client, alice_session.public_id, user("third question"))
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert set(response.json()) == {"id"}
    data = stored(alice_session, new_id)
    assert list(data) == ["type", "id", "parentId", "timestamp", "message"]  # pi's key order
    assert data["parentId"] == old_leaf
    assert data["message"] == user("third question")["message"]
    assert data["timestamp"].endswith("Z")
    assert Entry.objects.get(session=alice_session, entry_id=new_id).author == alice
    detail = alice_client.get(url(alice_session.public_id)).json()
    assert detail["leafId"] == new_id
    assert detail["messageCount"] == 5
    context = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert context["messages"][-1]["content"][0]["text"] == "third question"


def test_append_keeps_given_id_and_timestamp(alice_client, alice_session):
    body = {**assistant("answer"), "id": "feedbeef", "timestamp": "2026-02-01T10:00:00.000Z"}
    response = post(alice_client, alice_session.public_id, body)
    assert response.status_code == 201
    assert response.json() == {"id": "feedbeef"}
    assert stored(alice_session, "feedbeef")["timestamp"] == "2026-02-01T10:00:00.000Z"


def test_append_with_parent(alice_client, alice_session):
    first_answer = entry_ids(alice_session)[4]
    response = post(alice_client, alice_session.public_id, {**user("retry"), "parentId": first_answer})
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert stored(alice_session, new_id)["parentId"] == first_answer
    assert alice_client.get(url(alice_session.public_id)).json()["leafId"] == new_id
    context = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert [m["content"][0]["text"] for m in context["messages"]] == ["first question", "first answer", "retry"]


def test_explicit_null_parent_starts_a_new_root(alice_client, alice_session):
    response = post(alice_client, alice_session.public_id, {**user("fresh start"), "parentId": None})
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert stored(alice_session, new_id)["parentId"] is None
    tree = alice_client.get(url(alice_session.public_id, "/tree")).json()
    assert [n["id"] for n in tree["nodes"] if n["parentId"] is None] == [entry_ids(alice_session)[0], new_id]
    context = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert [m["content"][0]["text"] for m in context["messages"]] == ["fresh start"]


@pytest.mark.parametrize("kind", ["model_change", "thinking_level_change", "custom", "custom_message"])
def test_append_other_types(alice_client, alice_session, kind):
    bodies: dict[str, dict[str, Any]] = {
        "model_change": {"type": "model_change", "provider": "openai", "modelId": "gpt-5.1-codex"},
        "thinking_level_change": {"type": "thinking_level_change", "thinkingLevel": "low"},
        "custom": {"type": "custom", "customType": "my-ext", "data": {"n": 1}},
        "custom_message": {"type": "custom_message", "customType": "note", "content": "hello", "display": True},
    }
    response = post(alice_client, alice_session.public_id, bodies[kind])
    assert response.status_code == 201
    data = stored(alice_session, response.json()["id"])
    assert {k: data[k] for k in bodies[kind]} == bodies[kind]
    context = alice_client.get(url(alice_session.public_id, "/context")).json()
    if kind == "model_change":
        assert context["model"] == {"provider": "openai", "modelId": "gpt-5.1-codex"}
    if kind == "thinking_level_change":
        assert context["thinkingLevel"] == "low"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": {"role": "user", "content": "no type"}}, "type"),
        ({"type": 7}, "type"),
        ({"type": "message"}, "message"),
        ({"type": "message", "message": "text"}, "message"),
        ({"type": "message", "message": {"content": "x"}}, "message.role"),
        ({"type": "message", "message": {"role": "assistant", "content": "not a list"}}, "message.content"),
        ({"type": "model_change", "provider": "openai"}, "modelId"),
        ({"type": "thinking_level_change", "thinkingLevel": 3}, "thinkingLevel"),
        ({"type": "compaction", "summary": "s"}, "tokensBefore"),
        ({**user("x"), "timestamp": "yesterday"}, "timestamp"),
        ({**user("x"), "id": 12}, "id"),
        ({**user("x"), "id": ""}, "id"),
        ({**user("x"), "parentId": 12}, "parentId"),
        ({**user("x"), "parentId": ["a"]}, "parentId"),
        # longer than the columns they are stored in (PostgreSQL refused them with a 500)
        ({**user("x"), "id": "y" * 201}, "id"),
        ({"type": "t" * 65}, "type"),
        ({**user("x"), "timestamp": "2026-01-05T09:00:00." + "0" * 60 + "Z"}, "timestamp"),
        ({"type": "message", "message": {"role": "r" * 65, "content": "x"}}, "message.role"),
    ],
)
def test_invalid_entry(alice_client, alice_session, body, field):
    response = post(alice_client, alice_session.public_id, body)
    assert response.status_code == 400, response.content
    message = response.json()["message"]
    assert f"field '{field}'" in message
    assert Entry.objects.filter(session=alice_session).count() == 7


def test_unknown_parent(alice_client, alice_session):
    response = post(alice_client, alice_session.public_id, {**user("x"), "parentId": "nope"})
    assert response.status_code == 404
    assert response.json() == {"message": "Entry nope not found", "extra": {"parentId": "nope"}}
    assert Entry.objects.filter(session=alice_session).count() == 7


def test_duplicate_id(alice_client, alice_session):
    existing = entry_ids(alice_session)[2]
    response = post(alice_client, alice_session.public_id, {**user("x"), "id": existing})
    assert response.status_code == 409
    assert existing in response.json()["message"]


def test_body_must_be_an_object(alice_client, alice_session):
    response = post(alice_client, alice_session.public_id, [user("x")])
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"] == "Input should be a valid dictionary"
    assert Entry.objects.filter(session=alice_session).count() == 7


def test_body_must_be_json(alice_client, alice_session):
    response = post(alice_client, alice_session.public_id, "{not json")
    assert response.status_code == 400
    assert Entry.objects.filter(session=alice_session).count() == 7
