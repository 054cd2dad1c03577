"""What the agent did, as a reviewer reads it, in a real browser at both sizes: an edit drawn as a
diff whose "Show all" fetches the rest, a failed bash call marked, and the branch's Files changed
page reached from the session page, where a comment on the change is the session page's thread.
No console errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.render import tools
from sessions_app.store import services
from tests.browser.harness import session_actions, show_pane, wait_until
from tests.builders import assistant, tool_result, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def agent_session(owner: User) -> tuple[Any, dict[str, str]]:
    s = services.session_create(owner=owner, name="tools", cwd="/work")
    ids: dict[str, str] = {}
    old = "\n".join(f"value_{i} = {i}" for i in range(100))
    steps = [
        ("edit", call("c1", "edit", path="src/big.py", oldText=old, newText=old.replace(" = ", " = 10 * ")), False),
        ("bash", call("c2", "bash", command="pytest -q"), True),
        ("write", call("c3", "write", path="notes.md", content="# Notes\n\nfine\n"), False),
    ]
    services.entry_append(session=s, payload=user("do it", 1_767_600_000_000), author=owner)
    for n, (key, c, error) in enumerate(steps):
        ts = 1_767_600_001_000 + 10 * n
        ids[key] = services.entry_append(session=s, payload=assistant("", ts, call=c), author=owner).entry_id
        text = "1 failed" if error else "ok"
        result = tool_result(c["id"], text, ts + 1, tool=c["name"], isError=error)
        ids[key + "_result"] = services.entry_append(session=s, payload=result, author=owner).entry_id
    s.refresh_from_db()
    return s, ids


def test_tool_calls_and_files_changed(login, server):
    page = login()
    session, ids = agent_session(User.objects.get(username="alice"))
    page.goto(f"{server}/sessions/{session.public_id}/")
    show_pane(page, "conversation")
    edit = f'#conversation .msg[data-id="{ids["edit"]}"] details.tool[data-tool=edit]'
    page.wait_for_selector(f"{edit}[open] pre.diff .dl.add")
    assert page.locator(f"{edit} pre.diff .dl").count() == tools.DIFF_LINES
    page.click(f"{edit} [data-show-call]")
    wait_until(page, f"document.querySelectorAll('{edit} pre.diff .dl').length === 200")
    assert page.locator(f"{edit} [data-show-call]").count() == 0

    bash = f'#conversation .msg[data-id="{ids["bash"]}"] details.tool[data-tool=bash]'
    page.click(f"{bash} > summary")
    page.wait_for_selector(f"{bash} [data-failed]")
    assert "pytest -q" in page.inner_text(f"{bash} pre.tool-command")

    session_actions(page)
    page.click("[data-action=files]")
    page.wait_for_selector("[data-files-changed]")
    assert page.locator("[data-file]").evaluate_all("els => els.map(e => e.dataset.file)") == [
        "src/big.py", "notes.md",
    ]  # fmt: skip
    assert page.locator('[data-file="notes.md"] .pill').inner_text() == "written"
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"

    change = f'[data-file="src/big.py"] [data-change="{ids["edit"]}"]'
    page.click(f"{change} details.comment-pop > summary")
    page.fill(f"{change} details.comment-pop textarea", "Why **ten** times?")
    page.click(f"{change} details.comment-pop button.primary")
    page.wait_for_selector(f"{change} .comment strong:text('ten')")

    page.goto(f"{server}/sessions/{session.public_id}/?target={ids['edit']}")
    show_pane(page, "conversation")
    page.wait_for_selector(f'#conversation .msg[data-id="{ids["edit"]}"] .comment strong:text("ten")', state="attached")
