"""The Usage page in a real browser at both sizes: reached from the session page's actions, its
charts drawn (SVG, no script), the branches listed with the abandoned one marked, nothing wider
than the screen; the session list's cost column. No console errors."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.store import services
from tests.browser.harness import session_actions
from tests.builders import assistant, paid, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_usage_page(login, server):
    page = login()
    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="usage")
    q = services.entry_append(session=s, payload=user("question", 1_767_600_000_000), author=owner)
    first = services.entry_append(session=s, payload=assistant("a", usage=paid(0.4, 1200, output=1)), author=owner)
    services.leaf_move(session=s, entry_id=q.entry_id)
    for n in range(5):
        services.entry_append(
            session=s, payload=assistant(f"b{n}", usage=paid(0.1, 2000 + 500 * n, output=1)), author=owner
        )
        services.entry_append(session=s, payload=user(f"more {n}"), author=owner)
    s.refresh_from_db()

    page.goto(f"{server}/sessions/{s.public_id}/")
    session_actions(page)
    page.click("[data-action=usage]")
    page.wait_for_selector("[data-usage]")
    assert page.inner_text("[data-total-cost]") == "$0.9000"
    assert page.locator("svg.usage-chart").count() == 2
    assert page.locator("svg.usage-chart rect.bar").count() == 2
    assert page.locator("svg.usage-chart rect.bar.current").count() == 1
    assert page.locator("svg.usage-chart polyline.line").count() == 1
    assert page.locator(f'[data-branch="{first.entry_id}"] [data-abandoned]').count() == 1
    assert page.locator(f'[data-branch="{s.leaf_id}"] [data-current]').count() == 1
    chart = page.locator("svg.usage-chart").first.bounding_box()
    assert chart is not None and chart["height"] > 20
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"

    page.goto(f"{server}/?sort=cost")
    cell = page.locator(f"#session-{s.public_id} td.cost")
    assert cell.inner_text() == "$0.9000"
