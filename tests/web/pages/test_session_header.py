"""The session page's header: renaming swaps it in place (name updated, form closed; errors shown in
the open form), and a fork says where it came from, linking back only for a viewer who may see the
source."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.access import teams
from sessions_app.models import Session
from sessions_app.store import services, shares
from tests.worlds import detail

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    return str(response.content.decode())


def test_rename_with_htmx_swaps_the_header_with_the_new_name_and_the_form_closed(htmx_client, tree):
    r = htmx_client.post(f"/sessions/{tree.session.public_id}/rename/", {"name": "  Better <name>  "})
    html = _text(r)
    assert r.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith('<div class="title-wrap" id="session-title">')
    assert '<h1 class="title">Better &lt;name&gt;</h1>' in html
    assert '<details class="rename">' in html  # closed: no "open"
    assert 'value="Better &lt;name&gt;"' in html
    assert "<title>Better &lt;name&gt; · piweb</title>" in html  # htmx updates the tab's title
    assert "messages" in html and tree.session.public_id in html  # the meta line stays
    tree.session.refresh_from_db()
    assert tree.session.name == "Better <name>"


def test_a_rename_without_a_name_keeps_the_form_open_with_its_error(htmx_client, alice_client, tree):
    r = htmx_client.post(f"/sessions/{tree.session.public_id}/rename/", {"name": "   "})
    html = _text(r)
    assert r.status_code == 422 and "<html" not in html
    assert '<details class="rename" open>' in html
    assert '<ul class="form-errors" role="alert"><li>A name is required.</li></ul>' in html
    assert '<h1 class="title">Branchy session</h1>' in html
    r = alice_client.post(f"/sessions/{tree.session.public_id}/rename/", {"name": ""})
    assert r.status_code == 422 and "<html" in _text(r) and "A name is required." in _text(r)
    tree.session.refresh_from_db()
    assert tree.session.name == "Branchy session"


def test_bob_cannot_rename(bob_client, tree):
    assert bob_client.post(f"/sessions/{tree.session.public_id}/rename/", {"name": "x"}).status_code == 404


def test_a_fork_says_where_it_came_from_with_a_link_back(alice, alice_client, tree):
    r = alice_client.post(f"/sessions/{tree.session.public_id}/fork/", {"entry": tree.ids["a2b"]})
    fork = Session.objects.get(parent_session=tree.session)
    html = _text(alice_client.get(r["Location"]))
    note = re.search(r'<div class="fork-note[^>]*>(.*?)</div>', html, re.S)
    assert note is not None
    assert f'href="/sessions/{tree.session.public_id}/"' in note[1] and "Branchy session" in note[1]
    assert re.search(r"<title>Branchy session \(fork of Branchy session\) · piweb</title>", html)
    assert fork.public_id in r["Location"]


def test_a_fork_never_reveals_a_source_the_viewer_cannot_see(world, alice):
    """An editor of a team forks its session into their own; after leaving the team the source is
    out of their sight: no link, no name, not even that it was a fork."""
    editor = world.users["editor"]
    source = world.sessions["team"]
    fork = services.session_fork(session=source, entry_id=source.leaf_id, owner=editor)
    services.session_rename(session=source, name="Secret team plans", author=world.users["admin"])
    client = world.client("editor")
    assert "Secret team plans" in _text(client.get(f"/sessions/{fork.public_id}/"))  # still in the team
    teams.member_remove(team=world.core, user=editor, actor=world.users["admin"])
    html = _text(client.get(f"/sessions/{fork.public_id}/"))
    assert "fork-note" not in html and "Secret team plans" not in html and source.public_id not in html
    # A share link of the fork never shows it either.
    _, token = shares.share_create(session=fork, user=editor)
    shared = _text(Client().get(f"/s/{token}/"))
    assert "fork-note" not in shared and source.public_id not in shared


def test_the_header_keeps_its_parts_on_the_page(alice_client, tree):
    html = _text(alice_client.get(detail(tree)))
    head = html[html.index('<div class="session-head">') : html.index('<div class="workspace"')]
    assert head.count('id="session-title"') == 1 and 'id="head-actions"' in head
