"""Errors from the layers below reach the user through the one mapping for views (web/errors.py),
with their own status: a service's conflict stays 409 through a session view (session_view once
turned it into a 400), and a form a view cannot use is 400 with the view's own message."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.errors import SessionConflict
from sessions_app.models import Session
from sessions_app.store import services
from tests.worlds import Tree

pytestmark = pytest.mark.django_db


def plain(response: Any, status: int, message: str) -> None:
    assert response.status_code == status
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == message


@pytest.mark.parametrize("htmx", [False, True])
def test_a_services_conflict_through_a_session_view_is_409_with_its_message(alice_client, tree, monkeypatch, htmx):
    def conflict(**kwargs: Any) -> None:
        raise SessionConflict("an entry with id 'abcd1234' already exists", field="id")

    monkeypatch.setattr(services, "entry_append", conflict)  # the composer's service, by its public name
    headers = {"HX-Request": "true"} if htmx else {}
    r = alice_client.post(f"/sessions/{tree.session.public_id}/append/", {"text": "hello"}, headers=headers)
    plain(r, 409, "an entry with id 'abcd1234' already exists")


def test_an_empty_composer_is_400_and_appends_nothing(alice_client, tree: Tree):
    leaf = tree.session.leaf_id
    plain(alice_client.post(f"/sessions/{tree.session.public_id}/append/", {"text": ""}), 400, "Write something first.")
    tree.session.refresh_from_db()
    assert tree.session.leaf_id == leaf


@pytest.mark.parametrize(("part", "message"), [("gap", "bad gap"), ("branch", "bad branch")])
def test_a_tree_load_without_a_usable_node_is_400(alice_client, tree, part, message):
    url = f"/sessions/{tree.session.public_id}/tree/{part}/"
    plain(alice_client.get(url, {"node": tree.ids["u1"], "d": "99"}), 400, message)
    plain(alice_client.get(url), 400, message)


def test_a_new_chat_in_no_possible_team_is_400_and_makes_no_session(alice_client, alice):
    plain(alice_client.post("/sessions/new/", {"team": "x" * 201}), 400, "Choose a team or none.")
    assert not Session.objects.filter(owner=alice).exists()
