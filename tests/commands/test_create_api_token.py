"""manage.py create_api_token USERNAME [--name NAME]."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from sessions_app.models import ApiToken

pytestmark = pytest.mark.django_db


def create(*args: str) -> str:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue()


def test_prints_a_token_that_authenticates(alice):
    token = create("alice").strip()
    assert token.startswith("piweb_")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    assert client.get("/api/sessions").status_code == 200
    created = client.post("/api/sessions", {"name": "from the token"}, content_type="application/json")
    assert created.status_code == 201
    assert alice.pi_sessions.get().name == "from the token"


def test_prints_only_the_token(alice):
    output = create("alice")
    assert output.count("\n") == 1
    assert len(output.split()) == 1


def test_name_is_stored_and_token_is_not(alice):
    token = create("alice", "--name", "ci").strip()
    record = ApiToken.objects.get(user=alice)
    assert record.name == "ci"
    assert record.prefix == token[:12]
    assert token not in record.key_hash


def test_each_call_makes_a_new_token(alice):
    assert create("alice") != create("alice")
    assert ApiToken.objects.filter(user=alice).count() == 2


def test_unknown_user():
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        create("nobody")
    assert ApiToken.objects.count() == 0


def test_a_push_token_may_only_sync(alice):
    out = StringIO()
    call_command("create_api_token", "alice", "--scope", "push", stdout=out)
    client = Client(headers={"Authorization": f"Bearer {out.getvalue().strip()}"})
    assert client.get("/api/sessions").status_code == 403
    assert client.get("/api/sync/not-pushed-yet").status_code == 404
