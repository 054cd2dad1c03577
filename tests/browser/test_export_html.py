"""pi's HTML export, opened offline as a file: tree with branch guides, filters, search that marks
and steps through matches, the conversation with the app's markdown, branch switching, deep links,
and no script but its own (render/export.py, templates/sessions_app/export/)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.models import Session
from sessions_app.store import reviews, services
from tests.browser.harness import ConsoleLog, session_actions, wait_until
from tests.browser.shots import shot
from tests.builders import assistant, user
from tests.xss import ALL, hostile_payloads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def branchy(owner: User) -> tuple[Session, dict[str, str]]:
    s = services.session_create(owner=owner, name="Exported session")
    ids: dict[str, str] = {}

    def add(key: str, payload: dict[str, Any], parent: str | None = None) -> None:
        kw: dict[str, Any] = {"parent_id": ids[parent]} if parent else {}
        ids[key] = services.entry_append(session=s, payload=payload, author=owner, **kw).entry_id

    add("u1", user("How do I parse JSONL?", 1_767_600_000_000))
    add("a1", assistant("Read it **line by line**:\n\n- [x] open\n- [ ] parse\n\n```python\nfor line in f: pass\n```",
                        1_767_600_001_000))  # fmt: skip
    add("u2a", user("And in Rust?", 1_767_600_002_000))
    add("a2a", assistant("Use serde_json.", 1_767_600_003_000))
    add("u2b", user("And in Go?", 1_767_600_006_000), parent="a1")
    add("a2b", assistant("Use bufio.Scanner.", 1_767_600_007_000))
    for payload in hostile_payloads(1_767_600_008_000):
        add("x", payload)
    services.label_set(session=s, target_id=ids["u2a"], label="rusty " + ALL[:100], author=owner)
    services.leaf_move(session=s, entry_id=ids["a2b"])
    s.refresh_from_db()
    return s, ids


def test_the_export_is_interactive_offline(login, server, tmp_path):
    page = login()
    s, ids = branchy(User.objects.get(username="alice"))
    page.goto(f"{server}/sessions/{s.public_id}/")
    session_actions(page)
    with page.expect_download() as dl:
        page.click("text=Export HTML")
    path = tmp_path / "export.html"
    dl.value.save_as(path)

    offline = page.context.new_page()
    offline.goto(f"file://{path}")
    offline.wait_for_selector("#tree .row")
    # The branches: the tree draws them with guides; the conversation follows the session's leaf.
    guides = "".join(offline.locator("#tree .row .guide").all_inner_texts())
    assert "├─" in guides and "└─" in guides
    conv = offline.locator("#conv")
    assert "And in Go?" in conv.inner_text() and "And in Rust?" not in conv.inner_text()
    # The app's markdown, rendered on the server: a task list, one box per code block.
    assert offline.locator("#conv li.task input[type=checkbox][disabled]").count() == 2
    assert offline.locator("#conv .md strong").first.inner_text() == "line by line"
    assert offline.locator("#conv pre.hl").count() == 1
    shot(offline, "export-go")

    # Switch branch from the conversation: the previous-branch button at "And in Go?" (2/2) goes to "And in Rust?".
    go = offline.locator(f"#entry-{ids['u2b']}")
    assert go.locator(".sib-pos").inner_text() == "2/2"
    go.locator(".sibs button").first.click()
    wait_until(offline, "document.querySelector('#conv').innerText.includes('And in Rust?')")
    assert "And in Go?" not in conv.inner_text()
    assert offline.locator(f"#entry-{ids['u2a']}.target").count() == 1

    # Search: matches marked; Enter and ↓ step through them, the search stays; ↑ goes back.
    offline.fill("#q", "and in")
    wait_until(offline, "document.querySelectorAll('#tree mark').length >= 2")
    assert [m.lower() for m in offline.locator("#tree mark").all_inner_texts()][:2] == ["and", "in"]
    status = "document.getElementById('status').textContent"
    assert offline.evaluate(status).endswith("2 matches")
    offline.press("#q", "Enter")
    at = wait_until(offline, f"/^[12] of 2 matches$/.test({status}) && {status}")
    first = offline.locator("#conv .msg.target").get_attribute("id")
    offline.press("#q", "ArrowDown")
    wait_until(offline, f"{status} !== {at!r} && /^[12] of 2 matches$/.test({status})")
    second = offline.locator("#conv .msg.target").get_attribute("id")
    assert {first, second} == {f"entry-{ids['u2a']}", f"entry-{ids['u2b']}"}
    assert offline.input_value("#q") == "and in"
    offline.click("#prev")
    wait_until(offline, f"{status} === {at!r}")
    assert offline.locator("#conv .msg.target").get_attribute("id") == first
    shot(offline, "export-search")

    # Filters, and a deep link that brings back the branch, the entry, the filter and the search.
    offline.fill("#q", "")
    offline.click("#filters button:text('user-only')")
    wait_until(offline, "document.querySelector('#filters button.on').textContent === 'user-only'")
    texts = offline.locator("#tree .row").all_inner_texts()
    assert any("And in Rust?" in t for t in texts) and not any("serde_json" in t for t in texts)
    offline.goto(f"file://{path}?leafId={ids['a2a']}&targetId={ids['u2a']}&filter=labeled-only&q=rusty")
    offline.wait_for_selector("#conv .msg.target")
    assert offline.locator("#conv .msg.target").get_attribute("id") == f"entry-{ids['u2a']}"
    assert offline.input_value("#q") == "rusty"
    assert offline.locator("#filters button.on").inner_text() == "labeled-only"
    assert offline.locator("#tree .row").count() == 1

    offline.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    offline.mouse.move(300, 300)
    assert offline.evaluate("window.__xss") is None


def test_the_export_with_reviews_shows_threads_and_verdicts_offline(login, server, tmp_path):
    page = login()
    owner = User.objects.get(username="alice")
    s, ids = branchy(owner)
    root = reviews.comment_create(session=s, author=owner, entry_id=ids["a1"], body="Is **this** enough? " + ALL)
    reviews.comment_create(session=s, author=owner, entry_id=ids["a1"], body="yes", parent_id=root.pk)
    reviews.comment_create(session=s, author=owner, entry_id=ids["a2a"], body="on the other branch")
    reviews.verdict_create(session=s, reviewer=owner, entry_id=ids["a2b"], verdict="approved", body="fine")
    page.goto(f"{server}/sessions/{s.public_id}/")
    session_actions(page)
    with page.expect_download() as dl:
        page.click("[data-action=export-reviews]")
    path = tmp_path / "export.html"
    dl.value.save_as(path)

    offline = page.context.new_page()
    console = ConsoleLog(offline)
    offline.goto(f"file://{path}")
    offline.wait_for_selector("#conv .reviews")
    a1 = offline.locator(f"#entry-{ids['a1']} .reviews")
    assert a1.locator(".comment").count() == 2 and a1.locator(".comment.reply").count() == 1
    assert a1.locator(".md strong").first.inner_text() == "this"
    assert offline.locator(f"#entry-{ids['a2b']} .verdict.v-approved").inner_text().count("fine") == 1
    assert offline.locator(f'#tree .row[data-id="{ids["a1"]}"] .cm').inner_text() == "💬2"
    assert offline.locator(f'#tree .row[data-id="{ids["a2b"]}"] .vm.v-approved').count() == 1
    assert "on the other branch" not in offline.locator("#conv").inner_text()
    shot(offline, "export-reviews")
    # A comment's deep link opens its branch.
    other = reviews.comment_batches(session=s)
    linked = next(c for batch in other for c, _ in batch if c.entry_id == ids["a2a"])
    offline.goto(f"file://{path}#comment-{linked.pk}")
    offline.wait_for_selector(f"#comment-{linked.pk}")
    assert "And in Rust?" in offline.locator("#conv").inner_text()
    offline.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    offline.mouse.move(300, 300)
    assert offline.evaluate("window.__xss") is None
    assert console.unexpected() == []
