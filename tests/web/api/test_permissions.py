"""Every route: bob gets 404 for alice's session (as for a missing one), anonymous gets 401."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions_app.models import Entry, Session
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db

# (method, path suffix, body) for every route on one session. "{entry}" is replaced by an entry id.
SESSION_ROUTES: list[tuple[str, str, Any]] = [
    ("get", "", None),
    ("patch", "", {"name": "stolen"}),
    ("delete", "", None),
    ("get", "/export.jsonl", None),
    ("get", "/context", None),
    ("get", "/context?leaf={entry}", None),
    ("get", "/tree", None),
    ("post", "/entries", {"type": "message", "message": {"role": "user", "content": "hi"}}),
    ("put", "/leaf", {"entryId": "{entry}"}),
    ("put", "/leaf", {"entryId": None}),
    ("post", "/labels", {"targetId": "{entry}", "label": "mine"}),
    ("post", "/fork", {"entryId": "{entry}"}),
]
ROUTE_IDS = [f"{m.upper()} {p or '/'}{' ' + str(b) if b else ''}" for m, p, b in SESSION_ROUTES]


def call(client: Client, method: str, session: Session, suffix: str, body: Any):
    entry = entry_ids(session)[3]
    path = url(session.public_id, suffix.replace("{entry}", entry))
    if body is None:
        return getattr(client, method)(path)
    body = {k: (entry if v == "{entry}" else v) for k, v in body.items()}
    return getattr(client, method)(path, body, content_type="application/json")


def snapshot(session: Session) -> tuple[Any, ...]:
    fresh = Session.objects.get(pk=session.pk)
    return fresh.leaf_id, fresh.name, fresh.last_seq, Entry.objects.filter(session=session).count()


@pytest.mark.parametrize(("method", "suffix", "body"), SESSION_ROUTES, ids=ROUTE_IDS)
def test_bob_gets_404_for_alices_session(bob_client, alice_session, method, suffix, body):
    before = snapshot(alice_session)
    response = call(bob_client, method, alice_session, suffix, body)
    assert response.status_code == 404
    assert response.json() == {"message": "Session not found", "extra": {}}
    assert snapshot(alice_session) == before
    assert Session.objects.count() == 1  # no fork either


@pytest.mark.parametrize(("method", "suffix", "body"), SESSION_ROUTES, ids=ROUTE_IDS)
def test_anonymous_gets_401(client, alice_session, method, suffix, body):
    before = snapshot(alice_session)
    response = call(client, method, alice_session, suffix, body)
    assert response.status_code == 401
    assert response.json() == {"message": "Authentication required", "extra": {}}
    assert snapshot(alice_session) == before


@pytest.mark.parametrize(("method", "suffix", "body"), SESSION_ROUTES, ids=ROUTE_IDS)
def test_owner_reaches_every_route(alice_client, alice_session, method, suffix, body):
    response = call(alice_client, method, alice_session, suffix, body)
    assert response.status_code in (200, 201, 204)


def test_anonymous_gets_401_on_collection_routes(client, alice_session):
    assert client.get(url()).status_code == 401
    assert client.post(url(), {"name": "x"}, content_type="application/json").status_code == 401
    upload = {"file": SimpleUploadedFile("s.jsonl", b'{"type":"session","version":3,"id":"anon","timestamp":"x"}\n')}
    assert client.post(url(suffix="/import"), upload).status_code == 401
    assert Session.objects.count() == 1


def test_bob_does_not_see_alices_sessions(bob_client, alice_session):
    assert bob_client.get(url()).json() == []


def test_bob_cannot_import_into_alices_session(bob_client, alice_client, alice_session):
    exported = b"".join(alice_client.get(url(alice_session.public_id, "/export.jsonl")).streaming_content)
    grown = (
        exported
        + b'{"type":"custom","customType":"x","id":"bob00001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n'
    )
    response = bob_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", grown)})
    assert response.status_code == 201  # a session of bob's own, under a new server id
    assert response.json()["id"] != alice_session.public_id
    assert not Entry.objects.filter(session=alice_session, entry_id="bob00001").exists()
    assert Entry.objects.get(entry_id="bob00001").session.owner.username == "bob"


def test_inactive_user_is_refused(alice, alice_client, alice_session):
    alice.is_active = False
    alice.save()
    assert alice_client.get(url(alice_session.public_id)).status_code == 401
