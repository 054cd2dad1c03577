"""A form that fails comes back with its errors on the page: swapped in place of the form for htmx
(status 422, which htmx swaps: templates/base.html), the whole page again for a plain POST. Never a
bare plain-text 400."""

from __future__ import annotations

import pytest

from sessions_app.models import Membership, Team

pytestmark = pytest.mark.django_db

FORM_ERRORS = 422


def _text(response) -> str:
    return str(response.content.decode())


def test_adding_an_unknown_user_shows_the_error_in_the_invite_form(world):
    url = f"/teams/{world.core.public_id}/members/"
    r = world.client("admin", **{"HX-Request": "true"}).post(url, {"username": "nobody", "role": "editor"})
    html = _text(r)
    assert r.status_code == FORM_ERRORS and r["Content-Type"].startswith("text/html")
    assert "<html" not in html and html.lstrip().startswith('<div id="invite">')
    assert '<ul class="form-errors" role="alert"><li>No user &#x27;nobody&#x27;</li></ul>' in html
    assert 'value="nobody"' in html and '<option value="editor" selected>' in html  # what was typed stays
    # Without htmx: the team page again, with the error under the form.
    r = world.client("admin").post(url, {"username": "nobody", "role": "editor"})
    html = _text(r)
    assert r.status_code == FORM_ERRORS and "<html" in html and 'id="members"' in html
    assert "No user &#x27;nobody&#x27;" in html


def test_an_existing_member_and_an_empty_name_are_form_errors_too(world):
    client = world.client("admin", **{"HX-Request": "true"})
    url = f"/teams/{world.core.public_id}/members/"
    assert "viewer is already a member" in _text(client.post(url, {"username": "viewer", "role": "viewer"}))
    r = client.post(url, {"username": "", "role": "viewer"})
    assert r.status_code == FORM_ERRORS and "Give a username." in _text(r)


def test_a_member_added_with_htmx_shows_in_the_table_and_the_form_is_fresh(world, django_user_model):
    django_user_model.objects.create_user("newbie")
    r = world.client("admin", **{"HX-Request": "true"}).post(
        f"/teams/{world.core.public_id}/members/", {"username": "newbie", "role": "reviewer"}
    )
    html = _text(r)
    assert r.status_code == 200
    assert Membership.objects.filter(team=world.core, user__username="newbie", role="reviewer").exists()
    assert '<div id="members" hx-swap-oob="true">' in html and 'id="member-newbie"' in html
    assert 'value="newbie"' not in html and "form-errors" not in html


def test_demoting_or_removing_the_last_admin_is_shown_on_the_page(world):
    admin = world.client("admin")
    r = admin.post(f"/teams/{world.core.public_id}/members/admin/remove/")
    assert r.status_code == FORM_ERRORS and "<html" in _text(r)
    assert "A team needs at least one admin" in _text(r)
    r = world.client("admin", **{"HX-Request": "true"}).post(
        f"/teams/{world.core.public_id}/members/admin/role/", {"role": "viewer"}
    )
    assert r.status_code == FORM_ERRORS and _text(r).lstrip().startswith('<div id="members"')
    assert "A team needs at least one admin" in _text(r)


def test_a_team_without_a_name_is_shown_on_the_teams_page(alice_client):
    r = alice_client.post("/teams/new/", {"name": "   "})
    assert r.status_code == FORM_ERRORS and "<html" in _text(r)
    assert '<ul class="form-errors" role="alert"><li>A team needs a name.</li></ul>' in _text(r)
    assert not Team.objects.exists()


def test_token_and_share_forms_show_their_errors(alice, alice_client, tree):
    htmx = {"HX-Request": "true"}
    r = alice_client.post("/settings/tokens/new/", {"name": "x", "scope": "root", "expires_days": "0"}, headers=htmx)
    html = _text(r)
    assert r.status_code == FORM_ERRORS and html.lstrip().startswith('<div id="token-section">')
    assert html.count("<li>") >= 2  # the scope and the expiry, each once
    r = alice_client.post(f"/sessions/{tree.session.public_id}/share/", {"expires_days": "-3"}, headers=htmx)
    assert r.status_code == FORM_ERRORS and 'class="form-errors"' in _text(r)
    r = alice_client.post(f"/sessions/{tree.session.public_id}/share/", {"expires_days": "-3"})
    assert r.status_code == FORM_ERRORS and "<html" in _text(r) and 'class="form-errors"' in _text(r)


def test_htmx_is_told_to_swap_a_422(alice_client):
    html = _text(alice_client.get("/teams/"))
    assert '{"code": "422", "swap": true}' in html
