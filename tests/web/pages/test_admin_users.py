"""Deactivating a user in the admin signs them out everywhere and closes their websockets
(revoke.user_deactivate), whether by unticking "active" or by the admin action."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session as DjangoSession
from django.test import Client

from sessions_app.access import revoke
from sessions_app.models import AuditRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(django_user_model):
    user = django_user_model.objects.create_superuser("root", password="root-pw")
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def sent(monkeypatch):
    groups: list[str] = []
    monkeypatch.setattr(revoke, "recheck_send", groups.append)
    return groups


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    assert client.get("/").status_code == 200
    return client


def sessions_of(user: User) -> int:
    return sum(1 for s in DjangoSession.objects.all() if s.get_decoded().get("_auth_user_id") == str(user.pk))


def change_form_data(user: User, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_staff": "on" if user.is_staff else "",
        "is_superuser": "on" if user.is_superuser else "",
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    if user.is_active:
        data["is_active"] = "on"
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""} | {"last_login_0": "", "last_login_1": ""}


def test_unticking_active_signs_the_user_out_and_closes_their_sockets(
    root, alice, bob, sent, django_capture_on_commit_callbacks
):
    _, admin = root
    alice_browser, bob_browser = signed_in(alice), signed_in(bob)
    data = change_form_data(alice)
    del data["is_active"]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(f"/admin/auth/user/{alice.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    alice.refresh_from_db()
    assert not alice.is_active
    assert sessions_of(alice) == 0 and sessions_of(bob) == 1
    assert sent == [revoke.user_group(alice.pk)]
    assert alice_browser.get("/").status_code == 302  # sent to sign in
    assert bob_browser.get("/").status_code == 200
    assert AuditRecord.objects.filter(action="user.deactivate", obj_id="alice", actor_username="root").exists()


def test_saving_a_user_without_deactivating_them_disconnects_nobody(
    root, alice, sent, django_capture_on_commit_callbacks
):
    _, admin = root
    signed_in(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(f"/admin/auth/user/{alice.pk}/change/", change_form_data(alice, first_name="Alice"))
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.is_active and alice.first_name == "Alice"
    assert sessions_of(alice) == 1 and sent == []


def test_the_action_deactivates_and_disconnects_the_selected_users(
    root, alice, bob, sent, django_capture_on_commit_callbacks
):
    me, admin = root
    signed_in(alice), signed_in(bob)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(
            "/admin/auth/user/",
            {"action": "deactivate_and_disconnect", "_selected_action": [alice.pk, me.pk]},
            follow=True,
        )
    assert "Deactivated and disconnected 1 user(s)." in response.content.decode()
    assert "cannot deactivate yourself" in response.content.decode()
    assert not User.objects.get(pk=alice.pk).is_active
    assert User.objects.get(pk=bob.pk).is_active and User.objects.get(pk=me.pk).is_active
    assert sessions_of(alice) == 0 and sessions_of(bob) == 1
    assert sent == [revoke.user_group(alice.pk)]
