"""Every page at a phone's size (390 by 844 px): nothing scrolls sideways, and what a finger taps (buttons,
fields, the links of the top bar and of toolbars, tree rows, tabs) is at least 40 px tall. The session
page and a share link's page show "Tree | Conversation" tabs; the list shows cards."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from sessions_app.access import api_tokens, teams
from sessions_app.store import shares
from tests.browser.harness import make_user, wait_until
from tests.browser.shots import shot
from tests.worlds import branchy_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TARGETS = ", ".join([
    "button", "input:not([type=hidden]):not([type=file]):not([type=checkbox]):not([type=radio])", "select",
    "textarea", "summary", ".btn", ".topbar a", ".pager a", ".chip", ".act", "label.check", ".pane-tab",
    "#tree-body li.node", "#tree-body summary.branch-head", ".sibs a",
])  # fmt: skip

# Visible elements (in a pane or a menu that is open) shorter than 40 px, described.
SMALL = """(selector) => Array.from(document.querySelectorAll(selector)).flatMap((el) => {
  const r = el.getBoundingClientRect();
  if (!r.width || !r.height || getComputedStyle(el).visibility === "hidden") return [];
  if (r.height >= 39.5) return [];
  const name = el.tagName.toLowerCase() + (el.className ? "." + String(el.className).trim().replace(/\\s+/g, ".") : "");
  return [name + " '" + (el.textContent || el.value || "").trim().slice(0, 30) + "' " + Math.round(r.height) + "px"];
})"""
SIDEWAYS = "document.documentElement.scrollWidth - window.innerWidth"


def fits(page: Any, what: str) -> None:
    assert page.evaluate(SIDEWAYS) <= 0, f"{what} scrolls sideways by {page.evaluate(SIDEWAYS)} px"
    assert page.evaluate(SMALL, TARGETS) == [], what


def visit(page: Any, url: str, name: str, theme: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    fits(page, url)
    shot(page, f"phone-{name}-{theme}")


@pytest.fixture
def viewport() -> str:
    return "phone"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_page_fits_a_phone(login, new_page, server, theme):
    alice = User.objects.get(username="alice")
    tree = branchy_tree(alice)
    team = teams.team_create(name="Core team with a rather long name", creator=alice)
    make_user("bob", "bob-pw")
    teams.member_invite(team=team, username="bob", role="editor", actor=alice)
    api_tokens.api_token_create(user=alice, name="laptop", scope="read")
    _, token = shares.share_create(session=tree.session, user=alice, entry_id=tree.ids["u2a"])
    sid = tree.session.public_id

    page = login(theme)
    visit(page, server + "/", "list", theme)
    assert page.locator("#session-table thead").is_hidden()  # cards, not a table
    # Without the header, the count says what it counts; the cost is a sum of money, not messages.
    after = page.evaluate(
        "[...document.querySelectorAll('#session-table td.num')]"
        ".map(td => [td.classList.contains('cost'), getComputedStyle(td, '::after').content])"
    )
    assert after and all(content == ("none" if cost else '" messages"') for cost, content in after)
    visit(page, f"{server}/sessions/{sid}/?target={tree.ids['a1']}", "session", theme)
    assert page.locator("#conversation").is_visible() and page.locator("#chat-composer").is_visible()
    assert page.locator(".tree-panel").is_hidden()

    # The top bar's menu, a message's actions, then the tree pane.
    page.click("[data-nav-toggle]")
    page.wait_for_selector(".topnav a[href='/teams/']", state="visible")
    fits(page, "the menu")
    shot(page, f"phone-menu-{theme}")
    page.click("[data-nav-toggle]")
    message = f"#e-{tree.ids['a1']}"
    page.click(f"{message} [data-acts-toggle]")
    page.wait_for_selector(f"{message} [data-action=fork]", state="visible")
    fits(page, "a message's actions")
    shot(page, f"phone-actions-{theme}")
    page.click("[data-pane-tab=tree]")
    page.wait_for_selector("#tree-body li.node", state="visible")
    assert page.locator("#conversation").is_hidden()
    fits(page, "the tree pane")
    shot(page, f"phone-tree-{theme}")
    page.click(f"#tree-body li.node[data-id='{tree.ids['u2b']}'] a.txt")  # a tap opens it in the conversation
    page.wait_for_selector(f"#conversation #e-{tree.ids['u2b']}.target", state="visible")
    assert page.locator(".tree-panel").is_hidden()

    visit(page, server + "/teams/", "teams", theme)
    visit(page, f"{server}/teams/{team.public_id}/", "team", theme)
    visit(page, server + "/settings/shares/", "shares", theme)
    visit(page, server + "/settings/tokens/", "tokens", theme)
    page.console.allow("status of 404")
    visit(page, server + "/no/such/page/", "404", theme)

    make_user("carol", "carol-pw").groups.add(Group.objects.get_or_create(name="auditors")[0])
    visit(login(theme, username="carol"), server + "/audit/", "audit", theme)

    anon = new_page(theme)
    visit(anon, f"{server}/s/{token}/", "shared", theme)
    anon.click("[data-pane-tab=tree]")
    wait_until(anon, "document.querySelector('#tree-body li.node')?.offsetParent != null")
    fits(anon, "the share page's tree")
    shot(anon, f"phone-shared-tree-{theme}")
    visit(anon, server + "/accounts/login/", "signin", theme)
