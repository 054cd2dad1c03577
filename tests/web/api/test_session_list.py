"""GET/POST /api/sessions: the listing and creating a session."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from sessions_app.store import services
from tests.builders import user
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db

LISTING_FIELDS = {
    "id", "name", "cwd", "created", "modified", "messageCount", "firstMessage", "leafId", "parentSessionId", "entries",
    "cost", "totalTokens",
}  # fmt: skip


def test_list_empty(alice_client):
    response = alice_client.get(url())
    assert response.status_code == 200
    assert response.json() == []


def test_list_shows_listing_fields(alice_client, alice_session):
    response = alice_client.get(url())
    assert response.status_code == 200
    [item] = response.json()
    assert set(item) == LISTING_FIELDS
    assert item["id"] == alice_session.public_id
    assert item["name"] == "Alice's session"
    assert item["cwd"] == "/home/alice/project"
    assert item["messageCount"] == 4
    assert item["firstMessage"] == "first question"
    assert item["leafId"] == alice_session.leaf_id
    assert item["parentSessionId"] is None
    assert item["entries"] == 7  # session_info + 6 appended entries
    assert item["modified"] == "2026-01-05T08:00:03.000Z"  # the last message's time, as pi lists it


def test_list_only_own_sessions_newest_first(alice, bob, alice_client):
    older = services.session_create(owner=alice, name="older")
    services.entry_append(session=older, payload=user("old", ts=1_700_000_000_000))
    newer = services.session_create(owner=alice, name="newer")
    services.entry_append(session=newer, payload=user("new", ts=1_800_000_000_000))
    services.session_create(owner=bob, name="bob's")
    ids = [s["id"] for s in alice_client.get(url()).json()]
    assert ids == [newer.public_id, older.public_id]


def test_create_without_body(alice, alice_client):
    response = alice_client.generic("POST", url())  # no body, no content type (curl -X POST)
    assert response.status_code == 201
    body = response.json()
    session = Session.objects.get(public_id=body["id"])
    assert session.owner == alice
    assert body["name"] == ""
    assert body["entries"] == 0
    assert body["leafId"] is None
    assert body["firstMessage"] == "(no messages)"
    assert session.entries.count() == 0


def test_create_with_empty_object(alice_client):
    response = alice_client.post(url(), {}, content_type="application/json")
    assert response.status_code == 201
    assert response.json()["name"] == ""


def test_create_with_name(alice_client):
    response = alice_client.post(url(), {"name": "  Refactor the parser  "}, content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "Refactor the parser"
    session = Session.objects.get(public_id=body["id"])
    [info] = session.entries.all()
    assert info.type == "session_info"
    assert body["leafId"] == info.entry_id
    assert body["entries"] == 1


def test_create_with_cwd(alice_client):
    response = alice_client.post(url(), {"cwd": "/srv/app"}, content_type="application/json")
    assert response.status_code == 201
    assert response.json()["cwd"] == "/srv/app"
    assert Session.objects.get(public_id=response.json()["id"]).cwd == "/srv/app"


def test_created_session_is_listed(alice_client):
    created = alice_client.post(url(), {"name": "listed"}, content_type="application/json").json()
    assert [s["id"] for s in alice_client.get(url()).json()] == [created["id"]]


def test_create_rejects_wrong_name_type(alice_client):
    response = alice_client.post(url(), {"name": ["not", "a", "string"]}, content_type="application/json")
    assert response.status_code == 422
    assert Session.objects.count() == 0
