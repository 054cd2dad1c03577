"""Bearer tokens: `Authorization: Bearer <token>`, stored hashed, last use recorded."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import ApiToken, Session
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def test_token_authenticates(alice, token_client, alice_session):
    response = token_client.get(url())
    assert response.status_code == 200
    assert [s["id"] for s in response.json()] == [alice_session.public_id]
    assert token_client.get(url(alice_session.public_id, "/tree")).status_code == 200


def test_token_can_write(alice, token_client):
    response = token_client.post(url(), {"name": "via token"}, content_type="application/json")
    assert response.status_code == 201
    assert Session.objects.get(public_id=response.json()["id"]).owner == alice


def test_token_of_another_user_sees_only_theirs(bob, alice_session):
    _, token = api_token_create(user=bob)
    client = bearer(token)
    assert client.get(url()).json() == []
    assert client.get(url(alice_session.public_id)).status_code == 404


@pytest.mark.parametrize(
    "header",
    ["Bearer piweb_wrong", "Bearer ", "Token {token}", "Basic {token}", "bearer-{token}"],
)
def test_wrong_token_is_401(alice_token, alice_session, header):
    client = Client(headers={"Authorization": header.format(token=alice_token)})
    assert client.get(url()).status_code == 401
    assert client.get(url(alice_session.public_id)).status_code == 401


def test_revoked_token_is_401(alice, alice_token):
    assert bearer(alice_token).get(url()).status_code == 200
    ApiToken.objects.filter(user=alice).update(revoked_at=timezone.now())
    assert bearer(alice_token).get(url()).status_code == 401


def test_token_of_inactive_user_is_401(alice, alice_token):
    alice.is_active = False
    alice.save()
    assert bearer(alice_token).get(url()).status_code == 401


def test_token_is_stored_hashed(alice):
    record, token = api_token_create(user=alice, name="laptop")
    assert token.startswith("piweb_")
    assert len(token) > 40
    record.refresh_from_db()
    assert record.key_hash == hashlib.sha256(token.encode()).hexdigest()
    assert record.prefix == token[:12]
    assert record.name == "laptop"
    secret = token[len("piweb_") :]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM sessions_app_apitoken")
        for row in cursor.fetchall():
            for value in row:
                assert token not in str(value)
                assert secret not in str(value)


def test_tokens_are_unique(alice):
    tokens = {api_token_create(user=alice)[1] for _ in range(5)}
    assert len(tokens) == 5


def test_last_used_is_recorded(alice, alice_token):
    assert ApiToken.objects.get(user=alice).last_used_at is None
    before = timezone.now()
    assert bearer(alice_token).get(url()).status_code == 200
    used = ApiToken.objects.get(user=alice).last_used_at
    assert used is not None
    assert before <= used <= timezone.now()


def test_last_used_is_refreshed_when_stale(alice, alice_token):
    stale = timezone.now() - timedelta(hours=2)
    ApiToken.objects.filter(user=alice).update(last_used_at=stale)
    bearer(alice_token).get(url())
    used = ApiToken.objects.get(user=alice).last_used_at
    assert used is not None
    assert used > stale + timedelta(hours=1)


def test_token_request_does_not_log_in(alice_token):
    client = bearer(alice_token)
    client.get(url())
    assert "sessionid" not in client.cookies
    assert Client().get(url()).status_code == 401
