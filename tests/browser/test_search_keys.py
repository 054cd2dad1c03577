"""Search across sessions from the keyboard, in a real browser at both sizes (issue 18): Ctrl+K
from the session list focuses the header's search box, Enter lands on /search/, the arrows and Tab
move through the hits, Enter opens one on its branch with the entry targeted; on the session page
"/" is still the tree's search and Ctrl+K the header's. No console errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.store import services
from tests.browser.harness import show_pane, wait_until
from tests.builders import assistant, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSED = "document.activeElement && document.activeElement.matches({!r})"


def focused(page: Any, selector: str) -> bool:
    return bool(page.evaluate(FOCUSED.format(selector)))


def forked_session(owner: User) -> tuple[Any, dict[str, str]]:
    """u1 -> a1 -> u2 -> u4 (the session's leaf), and u3 a second child of a1: the word zanzibar
    is in u2 and in u3, which is on no branch the session opens on."""
    s = services.session_create(owner=owner, name="keyboard search", cwd="/w")
    add = services.entry_append
    ids = {"u1": add(session=s, payload=user("start here", 1_767_600_000_000), author=owner).entry_id}
    ids["a1"] = add(session=s, payload=assistant("a reply", 1_767_600_001_000), author=owner).entry_id
    ids["u2"] = add(session=s, payload=user("zanzibar on the main line", 1_767_600_002_000), author=owner).entry_id
    ids["u3"] = add(
        session=s, payload=user("zanzibar on the side branch", 1_767_600_003_000), parent_id=ids["a1"], author=owner
    ).entry_id
    ids["u4"] = add(
        session=s, payload=user("the end of the main line", 1_767_600_004_000), parent_id=ids["u2"], author=owner
    ).entry_id
    return s, ids


def test_search_from_the_keyboard_lands_on_the_hit(login, server):
    page = login()
    s, ids = forked_session(User.objects.get(username="alice"))
    page.goto(f"{server}/")
    page.wait_for_selector("#session-table")

    # Ctrl+K on the session list: the header's search box, whatever the screen size.
    page.keyboard.press("Control+K")
    wait_until(page, FOCUSED.format("[data-header-search]"))
    assert page.locator("[data-header-search]").is_visible()
    page.keyboard.type("zanzibar")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}/search/?q=zanzibar")

    hits = page.locator("[data-search-hit]")
    assert hits.count() == 2
    hrefs = [hits.nth(i).get_attribute("href") or "" for i in range(2)]
    assert sorted(hrefs) == sorted(f"/sessions/{s.public_id}/?leaf={ids[k]}&target={ids[k]}" for k in ("u2", "u3"))
    assert all(m.lower() == "zanzibar" for m in page.locator("[data-search-hit] mark").all_inner_texts())

    # The page's box has the focus; the arrows go down into the hits and back, Tab goes on.
    assert focused(page, "[data-search-page-box]")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[0]
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[1]
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[0]
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[1]

    # Enter opens the hit: on its own branch (u3 is not on the session's leaf), the entry targeted.
    side = hrefs[1].endswith(f"target={ids['u3']}")
    opened = ids["u3"] if side else ids["u2"]
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}{hrefs[1]}")
    page.wait_for_selector(f"#e-{opened}.target")
    show_pane(page, "conversation")
    assert page.locator(f"#e-{opened}").is_visible()
    shown = page.evaluate("[...document.querySelectorAll('#conversation .msg[data-id]')].map(m => m.dataset.id)")
    branch = ["u1", "a1", "u3"] if side else ["u1", "a1", "u2"]  # the branch up to the hit
    assert [k for k in ("u1", "a1", "u2", "u3", "u4") if ids[k] in shown] == branch

    # On the session page "/" is the tree's search, Ctrl+K the header's; "/" typed in a box is a "/".
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("/")
    wait_until(page, FOCUSED.format("[data-tree-search]"))
    assert page.locator("[data-tree-search]").is_visible()
    page.keyboard.press("Control+K")
    wait_until(page, FOCUSED.format("[data-header-search]"))
    assert page.locator("[data-header-search]").is_visible()
    page.keyboard.type("side/branch")
    assert page.input_value("[data-header-search]") == "side/branch"
    assert page.input_value("[data-tree-search]") == ""
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}/search/?q=side%2Fbranch")
    assert [h.get_attribute("href") for h in page.locator("[data-search-hit]").all()] == [
        f"/sessions/{s.public_id}/?leaf={ids['u3']}&target={ids['u3']}"
    ]
