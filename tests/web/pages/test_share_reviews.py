"""A share link shows review threads and verdicts only if its creator chose that (include_comments,
off by default), read-only; a branch link only those anchored in its scope (the path to its entry
and what is below it), never one on another branch.

tests.worlds.branchy_tree: info - model - u1 - a1 - u2a - a2a - tool - a3a (leaf)
                                                  \\ u2b - a2b
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.models import ShareLink
from sessions_app.store import reviews, shares
from tests.worlds import Tree

pytestmark = pytest.mark.django_db


def plant(tree: Tree) -> None:
    s, who = tree.session, tree.session.owner
    root = reviews.comment_create(session=s, author=who, entry_id=tree.ids["a1"], body="**on-path** remark")
    reviews.comment_create(session=s, author=who, entry_id=tree.ids["a1"], body="a reply", parent_id=root.pk)
    reviews.comment_create(session=s, author=who, entry_id=tree.ids["a2b"], body="below-entry remark")
    reviews.comment_create(session=s, author=who, entry_id=tree.ids["a3a"], body="other-branch remark")
    reviews.comment_create(session=s, author=who, entry_id=tree.ids["u2a"], body="other-branch question")
    reviews.verdict_create(session=s, reviewer=who, entry_id=tree.ids["a2b"], verdict="approved")
    reviews.verdict_create(session=s, reviewer=who, entry_id=tree.ids["a3a"], verdict="flagged", body="bad branch")


def shared(tree: Tree, *, entry: str | None = None, include: bool, **query: str) -> str:
    entry_id = tree.ids[entry] if entry else None
    _, token = shares.share_create(
        session=tree.session, user=tree.session.owner, entry_id=entry_id, include_comments=include
    )
    response = Client().get(f"/s/{token}/", query)
    assert response.status_code == 200
    return response.content.decode()


def test_a_link_shows_no_comments_unless_its_creator_chose_that(tree):
    plant(tree)
    html = shared(tree, include=False)
    assert "remark" not in html and "data-comments" not in html and "data-verdict" not in html
    assert not ShareLink.objects.get().include_comments


def test_a_whole_session_link_with_comments_shows_threads_read_only(tree):
    plant(tree)
    html = shared(tree, include=True)  # the leaf a3a's path
    assert "<strong>on-path</strong> remark" in html and "a reply" in html and "other-branch remark" in html
    assert re.search(r'data-verdict="flagged"', html)
    # read-only: no comment, reply or resolve form, nothing posts
    assert 'data-action="comment"' not in html and 'data-action="resolve"' not in html
    assert "Reply" not in html and "/comments/" not in html and 'method="post"' not in html


def test_a_branch_link_shows_only_what_is_anchored_in_its_scope(tree):
    plant(tree)
    html = shared(tree, entry="u2b", include=True)
    assert "<strong>on-path</strong> remark" in html  # a1: on the path to u2b
    assert "below-entry remark" in html  # a2b: below it
    assert "other-branch" not in html and "bad branch" not in html and 'data-verdict="flagged"' not in html
    assert 'data-verdict="approved"' in html
    # an entry off its branch is not reachable, so neither are its threads
    assert Client().get(f"/s/{ShareLink.objects.get().pk}/", {"target": tree.ids["a3a"]}).status_code == 404


def test_tree_marks_within_a_scope(tree):
    plant(tree)
    scope = shares.share_scope(shares.share_create(session=tree.session, user=tree.session.owner,
                                                   entry_id=tree.ids["u2b"])[0])  # fmt: skip
    marks = reviews.tree_marks(session=tree.session, within=scope)
    assert set(marks) == {tree.ids["a1"], tree.ids["a2b"]}
    assert marks[tree.ids["a1"]]["comments"] == 2 and marks[tree.ids["a2b"]]["verdicts"] == ["approved"]
    everything = reviews.tree_marks(session=tree.session)
    assert {tree.ids["a3a"], tree.ids["u2a"]} <= set(everything)


def test_the_share_form_and_api_take_the_choice(tree, htmx_client, alice):
    html = htmx_client.get(f"/sessions/{tree.session.public_id}/").content.decode()
    assert 'name="include_comments"' in html and "checked" not in re.search(
        r'<input type="checkbox" name="include_comments"[^>]*>', html
    ).group(0)  # type: ignore[union-attr]
    sid = tree.session.public_id
    assert htmx_client.post(f"/sessions/{sid}/share/", {"include_comments": "1"}).status_code == 200
    assert htmx_client.post(f"/sessions/{sid}/share/", {"entry": tree.ids["u2b"]}).status_code == 200
    assert list(ShareLink.objects.order_by("pk").values_list("include_comments", flat=True)) == [True, False]
    api = Client()
    api.force_login(alice)
    r = api.post(f"/api/sessions/{sid}/shares", {"includeComments": True}, content_type="application/json")
    assert r.status_code == 201 and r.json()["includeComments"] is True
    r = api.post(f"/api/sessions/{sid}/shares", {}, content_type="application/json")
    assert r.status_code == 201 and r.json()["includeComments"] is False
    listing = api.get("/settings/shares/").content.decode()
    assert listing.count("data-share-comments") == 2  # of four links
