"""CSRF: cookie-authenticated writes need the token; bearer requests do not. No credentials (or a
dead token) is a 401, never the CSRF 403."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import ApiToken, Session
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict_client(alice) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    return client


def csrf_token(client: Client) -> str:
    client.get("/accounts/login/")  # any page that sets the CSRF cookie
    return client.cookies["csrftoken"].value


def test_cookie_post_without_csrf_token_is_refused(strict_client):
    response = strict_client.post(url(), {"name": "x"}, content_type="application/json")
    assert response.status_code == 403
    assert Session.objects.count() == 0


def test_cookie_writes_without_csrf_token_are_refused(strict_client, alice_session):
    sid = alice_session.public_id
    leaf = alice_session.leaf_id
    assert strict_client.patch(url(sid), {"name": "x"}, content_type="application/json").status_code == 403
    assert strict_client.delete(url(sid)).status_code == 403
    assert strict_client.put(url(sid, "/leaf"), {"entryId": None}, content_type="application/json").status_code == 403
    upload = {"file": SimpleUploadedFile("s.jsonl", b'{"type":"session","version":3,"id":"x","timestamp":"t"}\n')}
    assert strict_client.post(url(suffix="/import"), upload).status_code == 403
    fresh = Session.objects.get(pk=alice_session.pk)
    assert (fresh.name, fresh.leaf_id) == ("Alice's session", leaf)
    assert Session.objects.count() == 1


def test_cookie_post_with_wrong_csrf_token_is_refused(strict_client):
    csrf_token(strict_client)
    response = strict_client.post(
        url(), {"name": "x"}, content_type="application/json", headers={"X-CSRFToken": "x" * 32}
    )
    assert response.status_code == 403


def test_cookie_post_with_csrf_token_works(strict_client):
    token = csrf_token(strict_client)
    response = strict_client.post(url(), {"name": "x"}, content_type="application/json", headers={"X-CSRFToken": token})
    assert response.status_code == 201
    assert Session.objects.get().name == "x"


def test_cookie_reads_need_no_csrf_token(strict_client, alice_session):
    assert strict_client.get(url()).status_code == 200
    assert strict_client.get(url(alice_session.public_id, "/tree")).status_code == 200


def test_bearer_needs_no_csrf_token(alice_token, alice_session):
    client = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {alice_token}"})
    assert client.post(url(), {"name": "y"}, content_type="application/json").status_code == 201
    assert client.delete(url(alice_session.public_id)).status_code == 204


def test_bearer_with_session_cookie_needs_no_csrf_token(strict_client, alice_token):
    # A valid bearer token is tried first: a cookie riding along does not force the CSRF check.
    response = strict_client.post(
        url(), {"name": "z"}, content_type="application/json", headers={"Authorization": f"Bearer {alice_token}"}
    )
    assert response.status_code == 201


WRITES = [
    ("post", "", {"name": "x"}),
    ("patch", "/S", {"name": "x"}),
    ("delete", "/S", None),
    ("put", "/S/leaf", {"entryId": None}),
    ("post", "/S/labels", {"targetId": "a", "label": "x"}),
]


def writes(client: Client, sid: str) -> list[tuple[str, Any]]:
    out = []
    for method, path, body in WRITES:
        response = getattr(client, method)(url() + path.replace("S", sid), body, content_type="application/json")
        out.append((f"{method} {path}", response))
    return out


def test_unauthenticated_writes_get_401_with_a_json_body(alice_session):
    """No credentials at all: 401 (not the CSRF 403), a JSON error, and the way to authenticate."""
    client = Client(enforce_csrf_checks=True)
    for what, response in writes(client, alice_session.public_id):
        assert response.status_code == 401, what
        assert response["Content-Type"].startswith("application/json"), what
        assert response.json()["message"] == "Authentication required", what
        assert response["WWW-Authenticate"] == "Bearer", what
    upload = {"file": SimpleUploadedFile("s.jsonl", b'{"type":"session","version":3,"id":"x","timestamp":"t"}\n')}
    assert client.post(url(suffix="/import"), upload).status_code == 401
    assert client.get(url()).status_code == 401
    assert Session.objects.count() == 1


@pytest.mark.parametrize("state", ["expired", "revoked", "unknown"])
def test_writes_with_a_dead_token_get_401(alice, alice_session, state):
    record, token = api_token_create(user=alice)
    if state == "expired":
        ApiToken.objects.filter(pk=record.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif state == "revoked":
        ApiToken.objects.filter(pk=record.pk).update(revoked_at=timezone.now())
    else:
        token = "piweb_" + "x" * 43
    client = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {token}"})
    for what, response in writes(client, alice_session.public_id):
        assert response.status_code == 401, what
        assert response.json()["message"] == "Authentication required", what
    fresh = Session.objects.get(pk=alice_session.pk)
    assert fresh.name == "Alice's session"
