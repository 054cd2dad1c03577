"""The admin: sessions and entries browsable, searchable, filterable; entries read-only; links to the UI."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.store import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(django_user_model):
    user = django_user_model.objects.create_superuser("root", password="root-pw")
    client = Client()
    client.force_login(user)
    return client


def test_sessions_are_listed_with_a_link_to_the_ui(admin_client, tree):
    html = admin_client.get("/admin/sessions_app/session/?q=Branchy").content.decode()
    assert "Branchy session" in html
    assert f'href="/sessions/{tree.session.public_id}/"' in html


def test_entries_are_searchable_and_filterable(admin_client, tree):
    base = "/admin/sessions_app/entry/"
    assert "In Rust" not in admin_client.get(base + "?q=Go").content.decode()
    assert "And in Go?" in admin_client.get(base + "?q=Go").content.decode()
    for query in ("?type__exact=message", "?role__exact=user", "?label=question"):
        assert admin_client.get(base + query).status_code == 200, query
    html = admin_client.get(base + "?label=question").content.decode()
    assert f"target={tree.ids['u1']}" in html
    model_filter = admin_client.get(base).content.decode()
    assert "anthropic/claude-sonnet-4-5" in model_filter


def test_entries_are_read_only(admin_client, tree):
    entry = tree.session.entries.first()
    change = admin_client.get(f"/admin/sessions_app/entry/{entry.pk}/change/")
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()
    assert admin_client.get("/admin/sessions_app/entry/add/").status_code == 403
    assert admin_client.post(f"/admin/sessions_app/entry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403


def test_the_entry_label_filter_reads_long_labels(admin_client, tree):
    long = "y" * 250
    services.label_set(session=tree.session, target_id=tree.ids["a1"], label=long)
    html = admin_client.get("/admin/sessions_app/entry/").content.decode()
    assert f"?label={long}" in html
    html = admin_client.get("/admin/sessions_app/entry/", {"label": long}).content.decode()
    assert f"target={tree.ids['a1']}" in html and f"target={tree.ids['u1']}" not in html


@pytest.fixture
def team_world(alice, bob):
    from sessions_app.access import api_tokens, teams
    from sessions_app.store import shares

    team = teams.team_create(name="Platform team", creator=alice)
    teams.member_invite(team=team, username=bob.username, role="editor", actor=alice)
    session = services.session_create(owner=alice, name="Shared one")
    share, share_token = shares.share_create(session=session, user=alice, entry_id=None, expires_days=None)
    record, token = api_tokens.api_token_create(user=alice, name="ci token")
    return team, share, share_token, record, token


@pytest.fixture
def auditor_staff(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("carol", password="carol-pw", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="auditors")[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("who", ["admin_client", "auditor_staff"])
def test_teams_shares_and_tokens_are_shown_read_only_and_never_their_secrets(request, who, team_world):
    client = request.getfixturevalue(who)
    team, share, share_token, record, token = team_world
    index = client.get("/admin/").content.decode()
    for path in ("/admin/sessions_app/team/", "/admin/sessions_app/sharelink/", "/admin/sessions_app/apitoken/"):
        assert path in index, path
    teams_html = client.get("/admin/sessions_app/team/").content.decode()
    assert "Platform team" in teams_html
    team_page = client.get(f"/admin/sessions_app/team/{team.pk}/change/").content.decode()
    assert "bob" in team_page and "editor" in team_page and 'name="_save"' not in team_page
    for model, obj, secret in (("sharelink", share, share_token), ("apitoken", record, token)):
        listing = client.get(f"/admin/sessions_app/{model}/").content.decode()
        page = client.get(f"/admin/sessions_app/{model}/{obj.pk}/change/").content.decode()
        assert obj.prefix in listing and obj.prefix in page
        for html in (listing, page):
            assert obj.key_hash not in html and secret not in html and "key_hash" not in html
        assert 'name="_save"' not in page
        assert client.get(f"/admin/sessions_app/{model}/add/").status_code == 403
        assert client.post(f"/admin/sessions_app/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/sessions_app/team/add/").status_code == 403


def test_staff_who_are_not_auditors_do_not_see_them(django_user_model, team_world):
    user = django_user_model.objects.create_user("dave", password="dave-pw", is_staff=True)
    client = Client()
    client.force_login(user)
    assert client.get("/admin/sessions_app/team/").status_code == 403
    assert client.get("/admin/sessions_app/apitoken/").status_code == 403
