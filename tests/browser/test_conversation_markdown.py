"""How markdown looks in the conversation: task lists as checkboxes, headings in summaries kept small,
each code block boxed once (static/piweb/app.css, render/markup.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.store import services
from tests.browser.harness import show_pane
from tests.browser.shots import shot
from tests.builders import assistant, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = (
    "Plan:\n\n- [x] spaced the timestamps\n- [ ] add a tie-breaker\n\n"
    "```python\nx = sorted(ids)\n```\n\n```\nplain\n```"
)
SUMMARY = "## Goal\nFix the flaky test.\n\n### Done\n- [x] Spaced test timestamps\n\n# Next\nPrefer `-id`."

# For each code block in a message: the boxes drawn around it, from its <pre> up to the message
# (an element with a border, or a background that differs from its parent's).
BOXES = """() => Array.from(document.querySelectorAll('#conversation .md pre')).map(pre => {
  let boxes = 0;
  for (let el = pre; el && !el.classList.contains('md'); el = el.parentElement) {
    const s = getComputedStyle(el), p = getComputedStyle(el.parentElement);
    const border = parseFloat(s.borderTopWidth) > 0 && s.borderTopStyle !== 'none';
    const paint = s.backgroundColor !== 'rgba(0, 0, 0, 0)' && s.backgroundColor !== p.backgroundColor;
    if (border || paint) boxes += 1;
  }
  return boxes;
})"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_task_lists_summary_headings_and_code_blocks(login, server, theme):
    page = login(theme)
    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="Markdown")
    first = services.entry_append(session=s, payload=user("How?", 1_767_600_000_000), author=owner)
    services.entry_append(session=s, payload=assistant(ANSWER, 1_767_600_001_000), author=owner)
    services.entry_append(
        session=s, payload={"type": "branch_summary", "fromId": first.entry_id, "summary": SUMMARY}, author=owner
    )
    page.goto(f"{server}/sessions/{s.public_id}/")
    show_pane(page, "conversation")
    page.wait_for_selector("#conversation .m-branch_summary .md h2")

    boxes = page.locator("#conversation .m-assistant li.task input[type=checkbox]")
    assert boxes.count() == 2
    assert [b.is_checked() for b in boxes.all()] == [True, False]
    assert all(b.is_disabled() for b in boxes.all())
    assert "[x]" not in page.inner_text("#conversation")

    body = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#conversation .md p')).fontSize)")
    for tag in ("h1", "h2", "h3"):
        heading = f"document.querySelector('#conversation .m-branch_summary .md {tag}')"
        size = page.evaluate(f"parseFloat(getComputedStyle({heading}).fontSize)")
        assert size <= body * 1.2, (tag, size, body)

    assert page.evaluate(BOXES) == [1, 1]
    shot(page, f"markdown-{theme}")
