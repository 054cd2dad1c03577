"""Entry ids of any shape (issue 19), in the browser against daphne: a session whose ids hold '/',
'?', '#', '%', '..', quotes, '<>', backslashes and unicode opens, its image and "show all" load,
the explorer navigates to such an entry from the tree and from a deep link and highlights it, and
the console stays clean (conftest's new_page fails the test on any error)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User

from sessions_app.core.entryids import dom_id
from sessions_app.store.importing import pipeline
from tests.browser.harness import show_pane, wait_until
from tests.builders import assistant, entry, header, jsonl, tool_call, tool_result, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDS = {
    "u": "u/1 ?a=b&c#d",
    "call": "..",
    "tool": "t/100%25%",
    "bash": ' "quoted" <b>x</b> ',
    "image": "ünï/🙂",
    "alt": "a'b\\c/./d",
}
TARGET_ID = "(document.querySelector('#conversation .msg.target') || {dataset: {}}).dataset.id"
SHOW_ALL = "[...document.querySelectorAll('#conversation button')].filter(b => b.textContent === 'Show all')"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="  # 1x1
LONG = "\n".join(f"line {i}" for i in range(120))


@pytest.fixture
def viewport() -> str:
    return "desktop"


def odd_session(owner: User) -> str:
    call = assistant("running it", call=tool_call("c1", "seq 120"), stopReason="toolUse")
    bash = {"role": "bashExecution", "command": "seq 120", "output": LONG, "exitCode": 0, "timestamp": 5}
    image = user("", content=[{"type": "image", "data": PNG, "mimeType": "image/png"}])
    data = jsonl(
        header(),
        entry(IDS["u"], None, message=user("question\n\n" + "\n\n".join(f"part {i}" for i in range(80)))["message"]),
        entry(IDS["alt"], IDS["u"], message=assistant("the other answer")["message"]),
        entry(IDS["call"], IDS["u"], message=call["message"]),
        entry(IDS["tool"], IDS["call"], message=tool_result("c1", LONG, 3)["message"]),
        entry(IDS["bash"], IDS["tool"], message=bash),
        entry(IDS["image"], IDS["bash"], message=image["message"]),
    )
    return pipeline.session_import(owner=owner, data=data).session.public_id


TARGET_OF = (
    "(() => { const m = document.querySelector('#conversation .msg.target');"
    " const f = document.querySelector('#tree-body li.node.focus');"
    " return [m && m.dataset.id, m && m.id, f && f.dataset.id]; })()"
)


def target_of(page: Any) -> Any:
    """(data-id, element id) of the highlighted message, and the data-id of the tree's focus row."""
    return page.evaluate(TARGET_OF)


def in_view(page: Any, element_id: str) -> bool:
    return bool(
        page.evaluate(
            "id => { const r = document.getElementById(id).getBoundingClientRect();"
            " return r.bottom > 0 && r.top < window.innerHeight; }",
            element_id,
        )
    )


def test_a_session_with_odd_entry_ids_opens_navigates_and_highlights(login, server):
    page = login()
    sid = odd_session(User.objects.get(username="alice"))
    base = f"{server}/sessions/{sid}/"
    page.goto(base)
    page.wait_for_selector("#conversation .msg")
    # The image and the long outputs' "show all" (their URLs carry the ids as one segment each)
    page.locator("#conversation img.msg-img").scroll_into_view_if_needed()  # it loads lazily
    wait_until(page, "(() => { const i = document.querySelector('#conversation img.msg-img');"
                     " return i && i.complete && i.naturalWidth > 0; })()")  # fmt: skip
    page.locator("#conversation details.tool summary").click()  # the tool's result is drawn inside its call
    shows = page.locator("#conversation button:has-text('Show all')")
    assert shows.count() == 2
    shows.first.click()
    wait_until(page, f"{SHOW_ALL}.length === 1")
    shows.first.click()
    wait_until(page, f"{SHOW_ALL}.length === 0")
    wait_until(page, "document.querySelector('#conversation').textContent.split('line 119').length === 3")

    # The tree's row of the other answer: the explorer opens it and highlights it.
    show_pane(page, "tree")
    page.evaluate(
        "id => document.querySelector('#tree-body [data-id=\"' + CSS.escape(id) + '\"] a.txt').click()", IDS["alt"]
    )
    # Until htmx has settled the swap, rows kept by id still wear their old classes (the old focus).
    want = [IDS["alt"], dom_id(IDS["alt"], "e"), IDS["alt"]]
    wait_until(
        page,
        f"JSON.stringify({TARGET_OF}) === {json.dumps(json.dumps(want, separators=(',', ':'), ensure_ascii=False))}",
    )
    assert target_of(page) == want
    assert urlencode({"target": IDS["alt"]}) in page.url
    assert page.locator(f"#{dom_id(IDS['u'], 'e')}").count() == 1  # its path: the question, then it
    assert page.locator(f"#{dom_id(IDS['call'], 'e')}").count() == 0

    # A deep link to an entry on the other branch: opened, highlighted and scrolled to.
    page.goto(f"{base}?{urlencode({'target': IDS['bash']})}")
    page.wait_for_selector("#conversation .msg.target")
    assert target_of(page) == [IDS["bash"], dom_id(IDS["bash"], "e"), IDS["bash"]]
    assert in_view(page, dom_id(IDS["bash"], "e"))
    # Reloading what the explorer pushed lands on the same entry.
    page.reload()
    page.wait_for_selector("#conversation .msg.target")
    assert target_of(page)[0] == IDS["bash"]
