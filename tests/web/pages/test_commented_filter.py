"""The tree's "Commented" filter: only entries with review threads (on any branch, re-attached to
their nearest shown ancestor like pi's other filters), plus the current leaf; kept in the URLs the
tree makes; never offered or applied on a share link (which shows no comments)."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.store import reviews, shares
from tests.worlds import Tree, detail

pytestmark = pytest.mark.django_db


@pytest.fixture
def commented(alice, tree: Tree) -> Tree:
    root = reviews.comment_create(session=tree.session, author=alice, entry_id=tree.ids["u2a"], body="why Rust?")
    reviews.comment_create(session=tree.session, author=alice, entry_id=tree.ids["u2a"], body="ok", parent_id=root.pk)
    reviews.comment_create(session=tree.session, author=alice, entry_id=tree.ids["a2b"], body="off branch")
    gone = reviews.comment_create(session=tree.session, author=alice, entry_id=tree.ids["u2b"], body="never mind")
    reviews.comment_delete(comment=gone, session=tree.session, user=alice)  # only tombstones: not "commented"
    return tree


def tree_html(client: Client, tree: Tree, **params: str) -> str:
    return client.get(detail(tree, **params), headers={"HX-Target": "tree-body"}).content.decode()


def test_commented_shows_threads_and_the_leaf(htmx_client, commented):
    html = tree_html(htmx_client, commented, filter="commented")
    for key in ("u2a", "a2b", "a3a"):  # a3a: the session's leaf, always kept
        assert f'id="t-{commented.ids[key]}"' in html, key
    for key in ("u1", "a1", "u2b", "tool", "model"):
        assert f'id="t-{commented.ids[key]}"' not in html, key
    assert reviews.commented_entries(session=commented.session) == set(reviews.tree_marks(session=commented.session))
    assert "filter=commented" in html  # the rows' links keep the filter


def test_commented_filter_offered_and_kept(alice_client, commented):
    page = alice_client.get(detail(commented, filter="commented")).content.decode()
    assert 'value="commented" checked' in page and ">Commented</label>" in page
    other = alice_client.get(detail(commented, filter="labeled-only")).content.decode()
    assert 'value="commented" checked' not in other and f'id="t-{commented.ids["u2a"]}"' not in other


def test_no_comments_means_only_the_leaf(htmx_client, tree):
    html = tree_html(htmx_client, tree, filter="commented")
    assert f'id="t-{tree.ids["a3a"]}"' in html and f'id="t-{tree.ids["u1"]}"' not in html


def test_gap_and_branch_loads_take_the_filter(htmx_client, commented):
    base = f"/sessions/{commented.session.public_id}/tree/branch/?node={commented.ids['u2b']}&filter=commented"
    html = htmx_client.get(base).content.decode()
    assert f'id="t-{commented.ids["a2b"]}"' in html and "filter=commented" in html  # the branch's head is kept
    plain = htmx_client.get(base.replace("commented", "labeled-only")).content.decode()
    assert f'id="t-{commented.ids["a2b"]}"' not in plain


def test_share_links_neither_offer_nor_apply_it(alice, commented):
    _, token = shares.share_create(session=commented.session, user=alice, entry_id=None, expires_days=None)
    html = Client().get(f"/s/{token}/?filter=commented").content.decode()
    assert 'value="commented"' not in html
    assert f'id="t-{commented.ids["u1"]}"' in html  # read as the default filter
