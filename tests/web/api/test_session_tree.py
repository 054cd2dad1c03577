"""GET /api/sessions/{id}/tree: flat nodes in file order, labels resolved."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.store import services
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def test_tree_of_a_session(alice, alice_client, alice_session):
    ids = entry_ids(alice_session)
    response = alice_client.get(url(alice_session.public_id, "/tree"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"leafId", "nodes"}
    assert body["leafId"] == alice_session.leaf_id
    assert [n["id"] for n in body["nodes"]] == ids
    assert [n["parentId"] for n in body["nodes"]] == [None, *ids[:-1]]
    assert [n["type"] for n in body["nodes"]] == [
        "session_info", "model_change", "thinking_level_change", "message", "message", "message", "message",
    ]  # fmt: skip
    assert [n.get("role") for n in body["nodes"]] == [None, None, None, "user", "assistant", "user", "assistant"]
    for node in body["nodes"]:
        assert set(node) <= {"id", "parentId", "type", "role", "label", "timestamp"}
        assert node["timestamp"].endswith("Z")
        assert "label" not in node


def test_tree_resolves_labels(alice, alice_client, alice_session):
    ids = entry_ids(alice_session)
    services.label_set(session=alice_session, target_id=ids[3], label="old", author=alice)
    services.label_set(session=alice_session, target_id=ids[3], label="question", author=alice)
    services.label_set(session=alice_session, target_id=ids[4], label="gone", author=alice)
    services.label_set(session=alice_session, target_id=ids[4], label=None, author=alice)
    nodes = {n["id"]: n for n in alice_client.get(url(alice_session.public_id, "/tree")).json()["nodes"]}
    assert nodes[ids[3]]["label"] == "question"
    assert "label" not in nodes[ids[4]]
    assert [n["type"] for n in nodes.values()].count("label") == 4


def test_tree_of_a_generated_session_matches_the_file(alice_client, generated):
    data = generated(entries=150, seed=11, branch_prob=0.3, labels=6, compactions=1)
    lines = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)}).json()["id"]
    body = alice_client.get(url(session_id, "/tree")).json()
    assert body["leafId"] == lines[-1]["id"]
    assert [(n["id"], n["parentId"], n["type"], n["timestamp"]) for n in body["nodes"]] == [
        (e["id"], e["parentId"], e["type"], e["timestamp"]) for e in lines
    ]
    labels: dict[str, str] = {}
    for e in lines:
        if e["type"] == "label":
            if e.get("label"):
                labels[e["targetId"]] = e["label"]
            else:
                labels.pop(e["targetId"], None)
    assert {n["id"]: n["label"] for n in body["nodes"] if "label" in n} == labels
    assert {n["id"]: n["role"] for n in body["nodes"] if "role" in n} == {
        e["id"]: e["message"]["role"] for e in lines if e["type"] == "message"
    }
    assert len({n["parentId"] for n in body["nodes"]}) < len(body["nodes"])  # it does branch


def test_tree_of_an_empty_session(alice_client):
    session_id = alice_client.generic("POST", url()).json()["id"]
    assert alice_client.get(url(session_id, "/tree")).json() == {"leafId": None, "nodes": []}
