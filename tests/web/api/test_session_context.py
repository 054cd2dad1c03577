"""GET /api/sessions/{id}/context?leaf=ID: pi's buildSessionContext."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.store import services
from tests.builders import user
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_context_at_the_leaf(alice_client, alice_session):
    response = alice_client.get(url(alice_session.public_id, "/context"))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"leafId", "messages", "thinkingLevel", "model"}
    assert body["leafId"] == alice_session.leaf_id
    assert texts(body["messages"]) == ["first question", "first answer", "second question", "second answer"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert body["thinkingLevel"] == "high"
    assert body["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}


def test_context_at_an_earlier_entry(alice_client, alice_session):
    first_answer = entry_ids(alice_session)[4]
    response = alice_client.get(url(alice_session.public_id, "/context"), {"leaf": first_answer})
    assert response.status_code == 200
    body = response.json()
    assert body["leafId"] == first_answer
    assert texts(body["messages"]) == ["first question", "first answer"]


def test_context_before_model_and_thinking_changes(alice_client, alice_session):
    info = entry_ids(alice_session)[0]
    body = alice_client.get(url(alice_session.public_id, "/context"), {"leaf": info}).json()
    assert body == {"leafId": info, "messages": [], "thinkingLevel": "off", "model": None}


def test_context_follows_the_branch(alice, alice_client, alice_session):
    first_answer = entry_ids(alice_session)[4]
    services.leaf_move(session=alice_session, entry_id=first_answer)
    services.entry_append(session=alice_session, payload=user("a different follow-up"), author=alice)
    body = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert texts(body["messages"]) == ["first question", "first answer", "a different follow-up"]


def test_context_of_an_empty_session(alice_client):
    session_id = alice_client.generic("POST", url()).json()["id"]
    body = alice_client.get(url(session_id, "/context")).json()
    assert body == {"leafId": None, "messages": [], "thinkingLevel": "off", "model": None}


def test_unknown_leaf(alice_client, alice_session):
    response = alice_client.get(url(alice_session.public_id, "/context"), {"leaf": "nope"})
    assert response.status_code == 404
    assert response.json() == {"message": "Entry nope not found", "extra": {"entryId": "nope"}}


def test_context_after_a_compaction(alice_client, generated):
    data = generated(entries=120, seed=7, compactions=2, branch_prob=0.0)
    entries = {e["id"]: e for e in map(json.loads, data.decode().splitlines()[1:])}
    session_id = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)}).json()["id"]
    body = alice_client.get(url(session_id, "/context")).json()
    path, node = [], body["leafId"]
    while node is not None:
        path.append(entries[node])
        node = entries[node]["parentId"]
    path.reverse()
    compaction = [e for e in path if e["type"] == "compaction"][-1]
    first = body["messages"][0]
    assert first["role"] == "compactionSummary"
    assert first["summary"] == compaction["summary"]
    assert first["tokensBefore"] == compaction["tokensBefore"]
    assert [m["role"] for m in body["messages"]].count("compactionSummary") == 1
    # Kept: messages from firstKeptEntryId up to the compaction, then everything after it.
    start = next(i for i, e in enumerate(path) if e["id"] == compaction["firstKeptEntryId"])
    expected = [e["message"] for e in path[start:] if e["type"] == "message"]
    assert body["messages"][1:] == expected
