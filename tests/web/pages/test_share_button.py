"""The Share button (session head) and "share this branch" (each message) create a link through
POST /sessions/<id>/share/, shown once with a copy button, an optional expiry, and a way to
/settings/shares/ to manage them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import ShareLink

pytestmark = pytest.mark.django_db


def test_the_page_has_a_share_form_for_the_session_and_for_each_message(alice_client, tree):
    html = alice_client.get(f"/sessions/{tree.session.public_id}/").content.decode()
    action = f'hx-post="/sessions/{tree.session.public_id}/share/"'
    assert html.count(action) >= 2
    assert f'<input type="hidden" name="entry" value="{tree.ids["a3a"]}">' in html
    assert 'name="expires_days"' in html and 'href="/settings/shares/"' in html


def test_sharing_shows_the_link_once_with_a_copy_button(htmx_client, tree):
    sid = tree.session.public_id
    r = htmx_client.post(f"/sessions/{sid}/share/", {"entry": tree.ids["u2b"], "expires_days": "7"})
    html = r.content.decode()
    assert r.status_code == 200 and "<html" not in html
    url = re.search(r'id="share-url" class="mono" href="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    assert f'data-copy="{url}" data-action="copy-share"' in html
    assert "this branch" in html and 'href="/settings/shares/"' in html
    share = ShareLink.objects.get()
    assert share.entry_id == tree.ids["u2b"]
    assert share.expires_at is not None
    assert abs(share.expires_at - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    assert htmx_client.get(url.split("testserver")[1]).status_code == 200


def test_a_link_without_expiry_and_without_javascript(alice_client, tree):
    r = alice_client.post(f"/sessions/{tree.session.public_id}/share/", {"expires_days": ""})
    html = r.content.decode()
    assert r.status_code == 200 and "<html" in html and "the whole session" in html and "no expiry" in html
    share = ShareLink.objects.get()
    assert share.entry_id is None and share.expires_at is None
