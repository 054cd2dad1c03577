"""The tree's search box as a user drives it: matches marked, ↓ ↑ through them, Enter opens one and
keeps the search (with its place, previous and next), Enter again opens the next; the chosen filter
survives a reload (static/piweb/app.js, web/views.py)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tests.browser.harness import show_pane, wait_settled, wait_until
from tests.browser.shots import shot
from tests.browser.test_explorer_flows import branchy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STATUS = "(document.querySelector('[data-search-status]') || {}).textContent || ''"


def test_search_keys_results_and_filter_in_the_url(login, server, viewport):
    page = login()
    s, ids = branchy(User.objects.get(username="alice"))
    page.goto(f"{server}/sessions/{s.public_id}/")
    show_pane(page, "tree")
    page.fill("[data-tree-search]", "and in")
    page.wait_for_selector("#tree-body .results li.node mark")
    marks = page.locator("#tree-body .results mark").all_inner_texts()
    assert [m.lower() for m in marks] == ["and", "in", "and", "in"]
    wait_until(page, "location.search.includes('q=and+in')")  # the search is in the address bar

    # ↓ and ↑ from the box move through the matches.
    results = page.locator("#tree-body .results li.node")
    first, second = results.nth(0).get_attribute("data-id"), results.nth(1).get_attribute("data-id")
    assert {first, second} == {ids["u2a"], ids["u2b"]}
    page.press("[data-tree-search]", "ArrowDown")
    assert page.locator("#tree-body .sel").get_attribute("data-id") == first
    page.press("[data-tree-search]", "ArrowDown")
    assert page.locator("#tree-body .sel").get_attribute("data-id") == second
    page.press("[data-tree-search]", "ArrowUp")
    assert page.locator("#tree-body .sel").get_attribute("data-id") == first

    # Enter opens it: the search stays, with the match's place and the previous and next.
    page.press("[data-tree-search]", "Enter")
    page.wait_for_selector(f"#e-{first}.target")
    wait_until(page, f"{STATUS}.startsWith('1 of 2 matches')")
    assert "q=and+in" in page.url and f"target={first}" in page.url
    show_pane(page, "tree")
    assert page.input_value("[data-tree-search]") == "and in"
    assert page.locator("#tree-body .results mark").count() == 4
    shot(page, "tree-search-open")
    if viewport == "desktop":
        assert page.evaluate("document.activeElement.matches('[data-tree-search]')")
    else:
        page.click("[data-tree-search]")
    page.press("[data-tree-search]", "Enter")  # on the open match, Enter goes on to the next one
    page.wait_for_selector(f"#e-{second}.target")
    wait_until(page, f"{STATUS}.startsWith('2 of 2 matches')")
    show_pane(page, "tree")
    page.click("[data-search-prev]")
    page.wait_for_selector(f"#e-{first}.target", state="attached")
    wait_until(page, f"{STATUS}.startsWith('1 of 2 matches')")

    # The filter: chosen, it is in the URL; a reload brings it back.
    show_pane(page, "tree")
    wait_settled(page)  # (the explorer Previous swapped in: its search box is wired once settled)
    page.fill("[data-tree-search]", "")
    page.wait_for_selector("#tree-body ul.main li.node")
    wait_until(page, "!location.search.includes('q=')")
    assistants = "document.querySelectorAll('#tree-body li.node[data-role=assistant]').length"
    assert page.evaluate(assistants) >= 3
    page.click(".filters label:has-text('User only')")
    wait_until(page, "location.search.includes('filter=user-only')")
    wait_until(page, f"{assistants} <= 1")  # the entry being read stays, whatever the filter
    page.reload()
    show_pane(page, "tree")
    assert page.locator(".filters input[value=user-only]").is_checked()
    assert page.evaluate(assistants) <= 1
    assert re.search(r"filter=user-only", page.url)
