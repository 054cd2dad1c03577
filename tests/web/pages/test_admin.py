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
