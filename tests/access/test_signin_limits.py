"""Sign-in rate limiting, as django-axes counts (username and client together): after N failures
for one username from one client, that pair is refused; a higher per-client limit refuses a client
that tries many usernames. A stranger elsewhere cannot lock a user out."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db


def attempt(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def test_blocked_after_n_failures_for_a_username_from_one_client(settings, alice, bob):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    client = Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        assert attempt(client, "alice", "wrong").status_code == 200
    response = attempt(client, "alice", "alice-pw")  # right password, still refused
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in response.client.session
    assert AuditRecord.objects.filter(action="signin.failed").count() == 3
    blocked = AuditRecord.objects.get(action="signin.blocked")
    assert (blocked.obj_id, blocked.ip) == ("alice", "198.51.100.7")
    # Another account from the same place is not affected, nor alice from elsewhere.
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "bob", "bob-pw").status_code == 302
    assert attempt(Client(REMOTE_ADDR="203.0.113.9"), "alice", "alice-pw").status_code == 302


def test_a_stranger_cannot_lock_a_user_out(settings, alice):
    """Many wrong passwords for alice, from many places: she still signs in from her own."""
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    for i in range(10):
        attempt(Client(REMOTE_ADDR=f"198.51.100.{i}"), "alice", "wrong")
    for _ in range(3):
        attempt(Client(REMOTE_ADDR="198.51.100.1"), "alice", "wrong")  # one of them is blocked now
    assert "Too many" in attempt(Client(REMOTE_ADDR="198.51.100.1"), "alice", "alice-pw").content.decode()
    assert attempt(Client(REMOTE_ADDR="192.0.2.77"), "alice", "alice-pw").status_code == 302


def test_blocked_after_the_per_client_limit(settings, alice, bob):
    settings.PIWEB_SIGNIN_MAX_FAILURES = 3
    settings.PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT = 5
    client = Client(REMOTE_ADDR="192.0.2.1")
    for name in ("u", "v", "w", "x"):
        attempt(client, name, "wrong")
    assert attempt(client, "bob", "bob-pw").status_code == 302  # 4 failures: under both limits
    client = Client(REMOTE_ADDR="192.0.2.1")
    attempt(client, "y", "wrong")
    response = attempt(client, "bob", "bob-pw")
    assert "Too many failed sign-ins" in response.content.decode()
    assert attempt(Client(REMOTE_ADDR="192.0.2.2"), "bob", "bob-pw").status_code == 302


def test_the_per_client_limit_is_higher_by_default(settings):
    assert settings.PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT > settings.PIWEB_SIGNIN_MAX_FAILURES


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
    attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "alice-pw").status_code == 302
    attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "wrong")
    attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "wrong")
    assert attempt(Client(REMOTE_ADDR="192.0.2.30"), "alice", "alice-pw").status_code == 302
