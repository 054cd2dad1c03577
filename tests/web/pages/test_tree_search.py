"""The tree's search on the session page: matches marked, a result opened keeps the search with its
previous and next, and a URL with a search and a filter restores both (web/views.py; the browser
test tests/browser/test_tree_search.py drives the keys and the address bar)."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlparse

import pytest

from tests.worlds import detail

pytestmark = pytest.mark.django_db


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlparse(unescape(url)).query)


def test_matches_are_marked_in_the_results(alice_client, tree):
    html = alice_client.get(detail(tree, q="and IN")).content.decode()
    assert "<mark>And</mark> <mark>in</mark> Rust?" in html and "<mark>And</mark> <mark>in</mark> Go?" in html
    html = alice_client.get(detail(tree, q="<b>")).content.decode()
    assert "<mark><b>" not in html


def test_a_result_opens_with_the_search_kept(alice_client, tree):
    html = alice_client.get(detail(tree, q="and in", filter="no-tools")).content.decode()
    links = [query_of(u) for u in re.findall(r'<a class="txt" href="([^"]+)"', html)]
    assert links and all(q["q"] == ["and in"] and q["filter"] == ["no-tools"] for q in links)


def test_an_open_result_has_its_place_and_the_previous_and_next(alice_client, tree):
    ids = tree.ids
    html = alice_client.get(detail(tree, target=ids["u2a"], q="and in")).content.decode()
    assert "1 of 2 matches" in html
    prev = query_of(html.split("data-search-prev", 1)[0].rsplit('href="', 1)[1].split('"', 1)[0])
    nxt = query_of(html.split("data-search-next", 1)[0].rsplit('href="', 1)[1].split('"', 1)[0])
    assert nxt["target"] == [ids["u2b"]] and nxt["q"] == ["and in"]
    assert prev["target"] == [ids["u2b"]]  # two matches: both ways lead to the other one
    html = alice_client.get(detail(tree, target=ids["u2b"], q="and in")).content.decode()
    assert "2 of 2 matches" in html
    html = alice_client.get(detail(tree, target=ids["a1"], q="and in")).content.decode()
    assert "2 matches" in html and "of 2 matches" not in html and "data-search-next" not in html


def test_a_url_with_a_filter_and_a_search_restores_both(alice_client, tree):
    html = alice_client.get(detail(tree, filter="user-only", q="rust")).content.decode()
    assert 'value="user-only" checked' in html and 'name="q" value="rust"' in html
    assert "<mark>Rust</mark>" in html
