"""POST /api/sessions/{id}/labels: set a label, or clear it with no label."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app.models import Entry
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def post_label(client, session_id: str, body: dict[str, Any]):
    return client.post(url(session_id, "/labels"), body, content_type="application/json")


def tree_labels(client, session_id: str) -> dict[str, str]:
    nodes = client.get(url(session_id, "/tree")).json()["nodes"]
    return {n["id"]: n["label"] for n in nodes if "label" in n}


def test_set_label(alice, alice_client, alice_session):
    target = entry_ids(alice_session)[3]
    old_leaf = alice_session.leaf_id
    response = post_label(alice_client, alice_session.public_id, {"targetId": target, "label": " important "})
    assert response.status_code == 201
    entry = Entry.objects.get(session=alice_session, entry_id=response.json()["id"])
    assert entry.type == "label"
    assert entry.author == alice
    data = json.loads(entry.raw)
    assert list(data) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
    assert data["parentId"] == old_leaf
    assert (data["targetId"], data["label"]) == (target, "important")
    assert tree_labels(alice_client, alice_session.public_id) == {target: "important"}


def test_relabel_and_clear(alice_client, alice_session):
    target = entry_ids(alice_session)[3]
    post_label(alice_client, alice_session.public_id, {"targetId": target, "label": "one"})
    post_label(alice_client, alice_session.public_id, {"targetId": target, "label": "two"})
    assert tree_labels(alice_client, alice_session.public_id) == {target: "two"}
    response = post_label(alice_client, alice_session.public_id, {"targetId": target})
    assert response.status_code == 201
    assert "label" not in json.loads(Entry.objects.get(entry_id=response.json()["id"]).raw)
    assert tree_labels(alice_client, alice_session.public_id) == {}


@pytest.mark.parametrize("empty", [None, "", "   "])
def test_empty_label_clears(alice_client, alice_session, empty):
    target = entry_ids(alice_session)[3]
    post_label(alice_client, alice_session.public_id, {"targetId": target, "label": "x"})
    assert post_label(alice_client, alice_session.public_id, {"targetId": target, "label": empty}).status_code == 201
    assert tree_labels(alice_client, alice_session.public_id) == {}


def test_labels_do_not_enter_the_context(alice_client, alice_session):
    before = alice_client.get(url(alice_session.public_id, "/context")).json()
    post_label(alice_client, alice_session.public_id, {"targetId": entry_ids(alice_session)[3], "label": "x"})
    after = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert after["messages"] == before["messages"]
    assert after["leafId"] != before["leafId"]


def test_unknown_target(alice_client, alice_session):
    response = post_label(alice_client, alice_session.public_id, {"targetId": "nope", "label": "x"})
    assert response.status_code == 404
    assert response.json() == {"message": "Entry nope not found", "extra": {"targetId": "nope"}}
    assert Entry.objects.filter(session=alice_session).count() == 7


def test_target_is_required(alice_client, alice_session):
    assert post_label(alice_client, alice_session.public_id, {"label": "x"}).status_code == 422
