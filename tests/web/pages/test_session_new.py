"""The list's "New chat": a CSRF-protected POST that makes an empty session (in a team the user may
import into, if one is chosen) and lands on its page with the composer focused."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import Session

pytestmark = pytest.mark.django_db


def test_it_makes_an_empty_session_and_lands_on_its_composer(alice, alice_client):
    response = alice_client.post("/sessions/new/")
    session = Session.objects.get(owner=alice)
    assert response.status_code == 302
    assert response["Location"] == f"/sessions/{session.public_id}/#composer"
    assert session.team is None and session.last_seq == 0 and session.leaf_id is None
    page = alice_client.get(response["Location"]).content.decode()
    assert 'id="composer-text"' in page


def test_it_needs_a_post_with_a_csrf_token_and_a_signed_in_user(alice):
    assert Client().post("/sessions/new/").status_code == 302  # to the sign-in page
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/sessions/new/").status_code == 405
    assert client.post("/sessions/new/").status_code == 403
    assert not Session.objects.exists()


def test_the_list_has_the_button_and_its_shortcut(alice_client):
    html = alice_client.get("/").content.decode()
    assert 'action="/sessions/new/"' in html
    assert 'title="Start a new chat (n)"' in html and 'aria-keyshortcuts="n"' in html
    assert 'name="team"' not in html  # in no team: nothing to choose


def test_an_editor_starts_it_in_the_team(world):
    client = world.client("editor")
    html = client.get("/").content.decode()
    assert f'<option value="{world.core.public_id}">Core</option>' in html
    response = client.post("/sessions/new/", {"team": str(world.core.public_id)})
    assert response.status_code == 302
    session = Session.objects.get(owner=world.users["editor"])
    assert session.team == world.core
    assert response["Location"] == f"/sessions/{session.public_id}/#composer"
    # the team's other members see it
    assert f"/sessions/{session.public_id}/" in world.client("viewer").get("/").content.decode()


def test_a_viewer_or_an_outsider_cannot_start_one_in_the_team(world):
    viewer = world.client("viewer")
    assert "Core</option>" not in viewer.get("/").content.decode()  # a viewer may not import there
    before = Session.objects.count()
    assert viewer.post("/sessions/new/", {"team": str(world.core.public_id)}).status_code == 403
    assert world.client("owner").post("/sessions/new/", {"team": str(world.core.public_id)}).status_code == 404
    assert world.client("editor").post("/sessions/new/", {"team": "not-a-team"}).status_code == 404
    assert Session.objects.count() == before  # nothing half made
