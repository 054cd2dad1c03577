"""Sign-in rate limiting: after N failures per username or per IP, every attempt is refused."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db


def attempt(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def test_blocked_after_n_failures_per_username(settings, alice, bob):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    for i in range(3):
        assert attempt(Client(REMOTE_ADDR=f"198.51.100.{i}"), "alice", "wrong").status_code == 200
    response = attempt(Client(REMOTE_ADDR="198.51.100.50"), "alice", "alice-pw")  # right password, still refused
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in response.client.session
    assert AuditRecord.objects.filter(action="signin.failed").count() == 3
    blocked = AuditRecord.objects.get(action="signin.blocked")
    assert (blocked.obj_id, blocked.ip) == ("alice", "198.51.100.50")
    # Another account from the same place is not affected.
    assert attempt(Client(REMOTE_ADDR="198.51.100.50"), "bob", "bob-pw").status_code == 302


def test_blocked_after_n_failures_per_ip(settings, alice, bob):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    client = Client(REMOTE_ADDR="192.0.2.1")
    for name in ("x", "y", "z"):
        attempt(client, name, "wrong")
    response = attempt(client, "bob", "bob-pw")
    assert "Too many failed sign-ins" in response.content.decode()
    assert attempt(Client(REMOTE_ADDR="192.0.2.2"), "bob", "bob-pw").status_code == 302


def test_the_window_ends(settings, alice):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 2
    settings.PIWEB_SIGNIN_WINDOW_SECONDS = 1
    client = Client(REMOTE_ADDR="192.0.2.9")
    attempt(client, "alice", "wrong")
    attempt(client, "alice", "wrong")
    assert "Too many" in attempt(client, "alice", "alice-pw").content.decode()
    time.sleep(1.1)
    assert attempt(client, "alice", "alice-pw").status_code == 302


def test_admin_sign_in_is_limited_too(settings, django_user_model):
    django_user_model.objects.create_superuser("root", password="root-pw")
    settings.PIWEB_SIGNIN_MAX_FAILURES = 2
    client = Client(REMOTE_ADDR="192.0.2.20")
    attempt(client, "root", "wrong", "/admin/login/")
    attempt(client, "root", "wrong", "/admin/login/")
    response = attempt(client, "root", "root-pw", "/admin/login/")
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()


def test_success_resets_the_username_count(settings, alice):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "wrong")
    attempt(Client(REMOTE_ADDR="192.0.2.31"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="192.0.2.32"), "alice", "alice-pw").status_code == 302
    attempt(Client(REMOTE_ADDR="192.0.2.33"), "alice", "wrong")
    attempt(Client(REMOTE_ADDR="192.0.2.34"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="192.0.2.35"), "alice", "alice-pw").status_code == 302
