"""Branch compare in a real browser at both sizes: from the sibling switcher's "compare with
sibling" to the two branches side by side (stacked on a phone), the changed words marked, the tool
calls with their results in the same row, each side's cost; then "Compare with leaf" from an
entry's actions. No console errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.store import services
from tests.browser.harness import message_actions, show_pane
from tests.builders import assistant, tool_call, tool_result, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def usage(total: float) -> dict[str, Any]:
    return {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": {"total": total}}


def forked(owner: User) -> tuple[Any, dict[str, str]]:
    s = services.session_create(owner=owner, name="two tries")
    ids: dict[str, str] = {}

    def add(name: str, payload: dict[str, Any], parent: str | None) -> None:
        ids[name] = services.entry_append(session=s, payload=payload, parent_id=parent, author=owner).entry_id

    add("q", user("fix the build", 1_767_600_000_000), None)
    add("x1", assistant("I will run the quick tests", 1_767_600_001_000, call=tool_call("c1", "make test"),
                        usage=usage(0.25)), ids["q"])  # fmt: skip
    add("x2", tool_result("c1", "3 passed", 1_767_600_002_000), ids["x1"])
    add("y1", assistant("I will run the slow tests", 1_767_600_003_000, call=tool_call("c2", "make check"),
                        usage=usage(0.5)), ids["q"])  # fmt: skip
    add("y2", tool_result("c2", "1 failed", 1_767_600_004_000), ids["y1"])
    s.refresh_from_db()
    return s, ids


def test_compare_with_sibling_then_with_leaf(login, server, viewport):
    page = login()
    session, ids = forked(User.objects.get(username="alice"))
    page.goto(f"{server}/sessions/{session.public_id}/?leaf={ids['x2']}&target={ids['x1']}")
    show_pane(page, "conversation")
    page.click(f'#conversation .msg[data-id="{ids["x1"]}"] [data-compare-sibling]')
    page.wait_for_selector("[data-compare] [data-row]")
    assert ids["q"] in page.inner_text("[data-ancestor]")
    row = page.locator("[data-row]").first
    assert "make test" in row.locator(".side-a").inner_text()
    assert "make check" in row.locator(".side-b").inner_text()
    row.locator(".side-a details.tool > summary").click()
    row.locator(".side-b details.tool > summary").click()
    assert "3 passed" in row.locator(".side-a .tool-result").inner_text()
    assert "1 failed" in row.locator(".side-b .tool-result").inner_text()
    assert row.locator(".side-a del.wd").inner_text() == "quick"
    assert row.locator(".side-b ins.wd").inner_text() == "slow"
    assert page.inner_text('[data-side="A"] [data-cost]') == "$0.2500"
    assert page.inner_text('[data-side="B"] [data-cost]') == "$0.5000"

    a_box = row.locator(".side-a").bounding_box()
    b_box = row.locator(".side-b").bounding_box()
    if viewport == "phone":
        assert b_box["y"] >= a_box["y"] + a_box["height"] - 1, "the sides are stacked on a phone"
    else:
        assert abs(a_box["y"] - b_box["y"]) < 1 and b_box["x"] > a_box["x"] + a_box["width"] - 1
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"

    page.goto(f"{server}/sessions/{session.public_id}/?leaf={ids['x2']}&target={ids['x2']}")
    message = f'#conversation .msg[data-id="{ids["x1"]}"]'
    message_actions(page, message)
    page.click(f"{message} [data-action=compare]")
    page.wait_for_selector("[data-compare] [data-row]")
    assert page.input_value("input[name=b]") == session.leaf_id == ids["y2"]
    assert page.input_value("input[name=a]") == ids["x1"]
