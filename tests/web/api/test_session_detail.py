"""GET/PATCH/DELETE /api/sessions/{id}."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import Entry, Session
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db


def test_get(alice_client, alice_session):
    response = alice_client.get(url(alice_session.public_id))
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == alice_session.public_id
    assert body["name"] == "Alice's session"
    assert body["leafId"] == alice_session.leaf_id
    assert body["messageCount"] == 4


def test_get_unknown(alice_client):
    response = alice_client.get(url("no-such-session"))
    assert response.status_code == 404
    assert response.json() == {"message": "Session not found", "extra": {}}


def test_patch_renames_with_a_session_info_entry(alice, alice_client, alice_session):
    old_leaf = alice_session.leaf_id
    response = alice_client.patch(
        url(alice_session.public_id), {"name": "  Renamed  "}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "Renamed"
    info = Entry.objects.get(session=alice_session, entry_id=body["leafId"])
    assert info.type == "session_info"
    assert info.parent_id == old_leaf
    assert info.author == alice
    assert json.loads(info.raw)["name"] == "Renamed"
    assert alice_client.get(url(alice_session.public_id)).json()["name"] == "Renamed"


def test_patch_requires_name(alice_client, alice_session):
    response = alice_client.patch(url(alice_session.public_id), {}, content_type="application/json")
    assert response.status_code == 422
    assert Entry.objects.filter(session=alice_session).count() == 7


def test_delete(alice_client, alice_session):
    response = alice_client.delete(url(alice_session.public_id))
    assert response.status_code == 204
    assert response.content == b""
    assert not Session.objects.filter(pk=alice_session.pk).exists()
    assert not Entry.objects.filter(session_id=alice_session.pk).exists()
    assert alice_client.get(url(alice_session.public_id)).status_code == 404
    assert alice_client.delete(url(alice_session.public_id)).status_code == 404
