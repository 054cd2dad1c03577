"""The context inspector in a real browser at both sizes: reached from a message's actions and
with the `i` key on a tree node, it lists pi's context at that entry with the compaction cut. No
console errors."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.store import services
from tests.browser.harness import message_actions, show_pane
from tests.builders import assistant, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def turns(owner: User) -> tuple[str, list[str]]:
    """Three turns of a 10,000-token question and a short answer: at the last answer, the cut keeps
    from the second question."""
    s = services.session_create(owner=owner, name="turns", cwd="/w")
    ids = []
    for n in range(3):
        question = user(f"question {n} " + "q" * 40_000, 1_767_600_000_000 + 10 * n)
        ids.append(services.entry_append(session=s, payload=question, author=owner).entry_id)
        answer = assistant(f"answer {n}", 1_767_600_000_001 + 10 * n)
        ids.append(services.entry_append(session=s, payload=answer, author=owner).entry_id)
    return s.public_id, ids


def listed(page: object) -> list[str]:
    return page.locator(".ctx-list > li").evaluate_all(  # type: ignore[attr-defined,no-any-return]
        "els => els.map(e => e.hasAttribute('data-cut') ? 'cut' : e.dataset.entry)"
    )


def test_from_a_message_and_by_key(login, server):
    page = login()
    public_id, ids = turns(User.objects.get(username="alice"))
    page.goto(f"{server}/sessions/{public_id}/")
    message = f"#e-{ids[5]}"
    message_actions(page, message)
    page.locator(f"{message} [data-action=context]").click()
    page.wait_for_selector("[data-context-inspector]")
    assert page.locator("[data-context-inspector]").get_attribute("data-entry") == ids[5]
    assert listed(page) == [ids[0], ids[1], "cut", *ids[2:]]
    assert page.locator("[data-context-total] strong").get_attribute("data-tokens") == str(
        sum(-(-len(f"question {n} " + "q" * 40_000) // 4) + -(-len(f"answer {n}") // 4) for n in range(3))
    )
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"

    page.goto(f"{server}/sessions/{public_id}/")
    show_pane(page, "tree")
    page.locator(f'#tree-body li.node[data-id="{ids[1]}"] .ic').click()
    page.keyboard.press("i")
    page.wait_for_selector(f'[data-context-inspector][data-entry="{ids[1]}"]')
    assert listed(page) == ["cut", ids[0], ids[1]]
