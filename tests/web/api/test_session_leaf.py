"""PUT /api/sessions/{id}/leaf: move the leaf (pi's branch / resetLeaf)."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from tests.builders import user
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def put_leaf(client, session_id: str, entry_id: str | None):
    return client.put(url(session_id, "/leaf"), {"entryId": entry_id}, content_type="application/json")


def test_move_leaf_then_append_branches(alice_client, alice_session):
    ids = entry_ids(alice_session)
    response = put_leaf(alice_client, alice_session.public_id, ids[4])
    assert response.status_code == 200
    assert response.json()["leafId"] == ids[4]
    assert response.json()["id"] == alice_session.public_id
    assert Session.objects.get(pk=alice_session.pk).leaf_id == ids[4]
    assert len(alice_client.get(url(alice_session.public_id, "/context")).json()["messages"]) == 2
    new_id = alice_client.post(
        url(alice_session.public_id, "/entries"), user("branch"), content_type="application/json"
    ).json()["id"]
    tree = alice_client.get(url(alice_session.public_id, "/tree")).json()
    assert {n["id"]: n["parentId"] for n in tree["nodes"]}[new_id] == ids[4]
    assert [n["id"] for n in tree["nodes"] if n["parentId"] == ids[4]] == [ids[5], new_id]


def test_null_leaf_makes_the_next_entry_a_root(alice_client, alice_session):
    response = put_leaf(alice_client, alice_session.public_id, None)
    assert response.status_code == 200
    assert response.json()["leafId"] is None
    context = alice_client.get(url(alice_session.public_id, "/context")).json()
    assert context == {"leafId": None, "messages": [], "thinkingLevel": "off", "model": None}
    new_id = alice_client.post(
        url(alice_session.public_id, "/entries"), user("new root"), content_type="application/json"
    ).json()["id"]
    nodes = alice_client.get(url(alice_session.public_id, "/tree")).json()["nodes"]
    assert {n["id"]: n["parentId"] for n in nodes}[new_id] is None


def test_unknown_entry(alice_client, alice_session):
    response = put_leaf(alice_client, alice_session.public_id, "nope")
    assert response.status_code == 404
    assert response.json() == {"message": "Entry nope not found", "extra": {"entryId": "nope"}}
    assert Session.objects.get(pk=alice_session.pk).leaf_id == alice_session.leaf_id


def test_entry_id_is_required(alice_client, alice_session):
    response = alice_client.put(url(alice_session.public_id, "/leaf"), {}, content_type="application/json")
    assert response.status_code == 422
    assert Session.objects.get(pk=alice_session.pk).leaf_id == alice_session.leaf_id
