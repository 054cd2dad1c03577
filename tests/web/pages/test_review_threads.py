"""Review threads inline on the session page: shown under their message with deep-link anchors,
added and resolved through the htmx forms (CSRF enforced), bodies sanitised, none on share links."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.models import ReviewComment
from sessions_app.store import reviews, shares
from tests.worlds import World
from tests.xss import ALL, assert_no_live_payload

pytestmark = pytest.mark.django_db


def page(world: World, name: str) -> str:
    return world.client(name).get(f"/sessions/{world.sessions['team'].public_id}/").content.decode()


def test_thread_shows_under_its_message(world):
    s, ids = world.sessions["team"], world.ids["team"]
    root = reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body="**why** this?")
    reply = reviews.comment_create(
        session=s, author=world.users["editor"], entry_id=ids["a1"], body="ok", parent_id=root.pk
    )
    html = page(world, "viewer")
    article = re.search(rf'<article[^>]*data-id="{ids["a1"]}".*?</article>', html, re.S)
    assert article
    assert f'id="comment-{root.pk}"' in article.group(0) and f'id="comment-{reply.pk}"' in article.group(0)
    assert "<strong>why</strong> this?" in article.group(0)
    assert 'data-action="comment"' not in html  # viewers read only
    reviewer_html = page(world, "reviewer")
    assert 'data-action="comment"' in reviewer_html
    element_ids = re.findall(r'\sid="([^"]+)"', reviewer_html)
    assert len(element_ids) == len(set(element_ids))  # threads' ids clash with no tree row's


def test_comment_and_resolve_through_htmx(world):
    s, ids = world.sessions["team"], world.ids["team"]
    client = world.client("reviewer", **{"HX-Request": "true"})
    url = f"/sessions/{s.public_id}/comments/"
    response = client.post(url, {"entry": ids["a2"], "body": "first"})
    assert response.status_code == 200
    root = ReviewComment.objects.get()
    assert f'id="comment-{root.pk}"' in response.content.decode()
    response = client.post(url, {"entry": ids["a2"], "body": "more", "parent": str(root.pk)})
    assert ReviewComment.objects.filter(parent=root).count() == 1
    response = client.post(url + "resolve/", {"comment": str(root.pk), "resolved": "1"})
    assert response.status_code == 200 and 'data-action="reopen"' in response.content.decode()
    root.refresh_from_db()
    assert root.resolved
    assert client.post(url, {"entry": ids["a2"], "body": "  "}).status_code == 400
    assert client.post(url, {"entry": ids["a2"], "body": "x", "parent": "abc"}).status_code == 400
    # editors may reopen anyone's thread; viewers may not touch it
    other = world.client("editor", **{"HX-Request": "true"})
    assert other.post(url + "resolve/", {"comment": str(root.pk), "resolved": "0"}).status_code == 200
    viewer = world.client("viewer", **{"HX-Request": "true"})
    assert viewer.post(url + "resolve/", {"comment": str(root.pk), "resolved": "1"}).status_code == 403


def test_forms_need_csrf(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.users["reviewer"])
    s = world.sessions["team"]
    response = client.post(f"/sessions/{s.public_id}/comments/", {"entry": world.ids["team"]["a1"], "body": "x"})
    assert response.status_code == 403
    assert not ReviewComment.objects.exists()


def test_hostile_bodies_render_inert(world):
    s, ids = world.sessions["team"], world.ids["team"]
    reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body=ALL)
    assert_no_live_payload(page(world, "viewer"))


def test_share_links_show_no_comments(world):
    s, ids = world.sessions["team"], world.ids["team"]
    reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body="internal remark")
    _, token = shares.share_create(session=s, user=world.users["admin"], entry_id=None, expires_days=None)
    response = Client().get(f"/s/{token}/")
    assert response.status_code == 200 and "second answer" in response.content.decode()
    assert "internal remark" not in response.content.decode()


def test_tree_rows_show_comment_counts_and_verdicts(world):
    s, ids = world.sessions["team"], world.ids["team"]
    for body in ("one", "two"):
        reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body=body)
    gone = reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body="three")
    reviews.comment_delete(comment=gone, session=s, user=world.users["reviewer"])
    reviews.verdict_create(session=s, reviewer=world.users["reviewer"], entry_id=ids["u2"], verdict="flagged")
    reviews.verdict_create(session=s, reviewer=world.users["reviewer"], entry_id=ids["u2"], verdict="approved")
    reviews.verdict_create(session=s, reviewer=world.users["editor"], entry_id=ids["u2"], verdict="changes_requested")
    html = page(world, "viewer")
    row = re.search(rf'<li class="node[^>]*data-id="{ids["a1"]}".*?</li>', html, re.S)
    assert row and 'data-comments="2"' in row.group(0)
    row = re.search(rf'<li class="node[^>]*data-id="{ids["u2"]}".*?</li>', html, re.S)
    assert row and re.findall(r'data-verdict="(\w+)"', row.group(0)) == ["changes_requested", "approved"]
