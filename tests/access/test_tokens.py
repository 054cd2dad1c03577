"""API tokens: scope (read tokens only GET), expiry, revocation, hashed at rest, the settings page."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import ApiToken, AuditRecord, Entry

pytestmark = pytest.mark.django_db


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def test_read_token_only_gets(world):
    _, token = api_token_create(user=world.users["owner"], scope="read")
    sid = world.sessions["personal"].public_id
    client = bearer(token)
    assert client.get("/api/sessions").status_code == 200
    assert client.get(f"/api/sessions/{sid}/tree").status_code == 200
    before = Entry.objects.count()
    for method, path, body in [
        ("post", f"/api/sessions/{sid}/labels", {"targetId": world.ids["personal"]["a1"], "label": "x"}),
        ("patch", f"/api/sessions/{sid}", {"name": "x"}),
        ("delete", f"/api/sessions/{sid}", None),
        ("post", "/api/sessions", {"name": "new"}),
    ]:
        response = getattr(client, method)(path, body, content_type="application/json")
        assert response.status_code == 403, (method, path)
        assert response.json()["message"] == "This token is read-only"
    assert Entry.objects.count() == before


def test_write_token_writes_within_the_role(world):
    _, token = api_token_create(user=world.users["viewer"], scope="write")
    sid = world.sessions["team"].public_id
    label = {"targetId": world.ids["team"]["a1"], "label": "x"}
    # the token carries the user's rights, never more: a viewer still cannot label
    assert bearer(token).post(f"/api/sessions/{sid}/labels", label, content_type="application/json").status_code == 403
    _, token = api_token_create(user=world.users["reviewer"], scope="write")
    assert bearer(token).post(f"/api/sessions/{sid}/labels", label, content_type="application/json").status_code == 201


def test_expired_revoked_and_inactive_tokens_are_refused(world):
    owner = world.users["owner"]
    record, token = api_token_create(user=owner, scope="read", expires_days=1)
    assert bearer(token).get("/api/sessions").status_code == 200
    ApiToken.objects.filter(pk=record.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert bearer(token).get("/api/sessions").status_code == 401
    record, token = api_token_create(user=owner)
    ApiToken.objects.filter(pk=record.pk).update(revoked_at=timezone.now())
    assert bearer(token).get("/api/sessions").status_code == 401
    _, token = api_token_create(user=owner)
    owner.is_active = False
    owner.save()
    assert bearer(token).get("/api/sessions").status_code == 401


def test_tokens_are_hashed_at_rest_and_last_use_recorded(world):
    record, token = api_token_create(user=world.users["owner"], name="ci")
    stored = ApiToken.objects.filter(pk=record.pk).values()[0]
    assert token not in {str(v) for v in stored.values()}
    assert stored["last_used_at"] is None
    bearer(token).get("/api/sessions")
    assert ApiToken.objects.get(pk=record.pk).last_used_at is not None


def test_settings_page_creates_once_lists_and_revokes(world):
    client = world.client("owner", **{"HX-Request": "true"})
    assert client.get("/settings/tokens/").status_code == 200
    response = client.post("/settings/tokens/new/", {"name": "laptop", "scope": "read", "expires_days": "30"})
    assert response.status_code == 200
    html = response.content.decode()
    found = re.search(r'<code id="new-token"[^>]*>([^<]+)</code>', html)
    assert found is not None
    token = found.group(1)
    assert "<html" not in html
    record = ApiToken.objects.get(user=world.users["owner"])
    assert (record.name, record.scope, record.expires_at is not None) == ("laptop", "read", True)
    assert bearer(token).get("/api/sessions").status_code == 200
    listing = client.get("/settings/tokens/").content.decode()
    assert token not in listing  # shown once
    assert record.prefix in listing
    response = client.post(f"/settings/tokens/{record.prefix}/revoke/")
    assert response.status_code == 200
    assert "revoked" in response.content.decode()
    assert bearer(token).get("/api/sessions").status_code == 401
    # someone else's token cannot be revoked by prefix
    other, _ = api_token_create(user=world.users["admin"])
    assert client.post(f"/settings/tokens/{other.prefix}/revoke/").status_code == 404  # not theirs: not found
    assert ApiToken.objects.get(pk=other.pk).revoked_at is None
    actions = list(AuditRecord.objects.filter(obj_type="api_token").values_list("action", flat=True))
    assert actions.count("token.create") == 2
    assert actions.count("token.revoke") == 1


def test_settings_pages_need_sign_in(client):
    for path in ("/settings/tokens/", "/settings/shares/", "/teams/"):
        assert client.get(path).status_code == 302


def test_command_scope_and_expiry(world):
    out = StringIO()
    call_command("create_api_token", "owner", "--scope", "read", "--expires-days", "7", stdout=out)
    token = out.getvalue().strip()
    record = ApiToken.objects.get(user=world.users["owner"])
    assert record.scope == "read"
    assert record.expires_at is not None
    assert timedelta(days=6) < record.expires_at - timezone.now() <= timedelta(days=7)
    assert bearer(token).get("/api/sessions").status_code == 200
    assert bearer(token).post("/api/sessions", {}, content_type="application/json").status_code == 403
