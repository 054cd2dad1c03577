"""The session page as a chat, in Chromium against a real daphne (websockets) on the test database:
send and watch the demo model stream, stop a reply, edit and resend, regenerate, compact, switch
branches with a summary; a second viewer sees the stream and the new entries live, and a viewer
reading another branch is not pulled off it."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.core import jsjson
from sessions_app.models import Entry, Session
from sessions_app.store import services
from tests.browser.harness import message_actions, show_pane, wait_until
from tests.browser.shots import shot
from tests.builders import stored_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_session(page, server: str, s: Session, query: str = "") -> None:
    page.goto(f"{server}/sessions/{s.public_id}/{query}")
    page.wait_for_selector("#chat-presence li")  # the socket is up and the snapshot arrived


def last_entry(s: Session, **filters: Any) -> Entry:
    entry = Entry.objects.filter(session=s, **filters).order_by("-seq").first()
    assert entry is not None
    return entry


def late_answer(route: Any) -> None:
    response = route.fetch()
    time.sleep(1.0)  # Chromium goes on meanwhile: the turn ends and its frames arrive
    route.fulfill(response=response)


def test_send_stream_stop_and_a_second_viewer(login, server):
    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="Live chat")
    a = login("light")
    b = login("dark")
    open_session(a, server, s)
    open_session(b, server, s)
    for page in (a, b):  # the deployed daphne (debug off) served htmx; the streaming below needs its ws extension
        assert page.evaluate("typeof htmx") == "object"
    assert a.inner_text("#chat-presence") == "alice" == b.inner_text("#chat-presence")  # one name per user
    shot(a, "chat-empty-light")

    # Type a prompt: A and B both watch it stream, then both see the finished exchange.
    a.fill("#composer-text", "Explain <b>streaming</b> & websockets")
    a.click("#chat-composer [data-action=send]")
    for page in (a, b):
        page.wait_for_selector("#chat-streaming article.streaming .stream-block")
    wait_until(a, "document.querySelector('#chat-streaming .stream-block').textContent.length > 40")
    shot(a, "chat-streaming-light")
    shot(b, "chat-streaming-dark")
    assert b.locator("#chat-streaming b").count() == 0  # the echoed prompt stays text
    for page in (a, b):
        page.wait_for_selector("#conversation .m-assistant:has-text('You said')")
        page.wait_for_selector("#chat-streaming article", state="detached")
    assert "Explain <b>streaming</b> & websockets" in b.inner_text("#conversation .m-user")
    show_pane(b, "tree")
    b.wait_for_selector("#tree-body li.node.k-assistant")
    assert b.locator("#tree-body li.node.k-assistant").count() == 1
    show_pane(b, "conversation")
    assert a.input_value("#composer-text") == ""
    shot(a, "chat-answered-light")
    shot(b, "chat-answered-dark")

    # Stop one: the partial reply is kept and marked aborted. The demo model quotes the prompt, so a
    # long prompt gives a busy machine seconds to press stop before the reply ends by itself.
    a.fill("#composer-text", "Tell me a long story " + " ".join(["about trees and their branches"] * 6))
    a.keyboard.press("Control+Enter")
    b.wait_for_selector("#chat-streaming [data-action=stop]")
    wait_until(a, "document.querySelector('#chat-streaming .stream-block')?.textContent.length > 20")
    # The stop's answer comes late, after the stream (and its stop button) left the page: the page
    # still counts that request as finished and shows the stored, aborted reply.
    a.route("**/chat/stop/", late_answer)
    a.click("#chat-streaming [data-action=stop]")
    for page in (a, b):
        page.wait_for_selector("#conversation .m-assistant .note:has-text('Aborted')")
    reply = last_entry(s, type="message")
    assert stored_message(reply)["stopReason"] == "aborted"
    assert len(stored_message(reply)["content"][0]["text"]) > 0
    assert "Configure PIWEB" not in stored_message(reply)["content"][0]["text"]  # cut before its end
    assert a.locator("#conversation .m-assistant").count() == 2
    shot(a, "chat-stopped-light")


def test_edit_regenerate_compact_and_switch_branches(login, server):
    from tests.builders import assistant, user

    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="Branching chat")
    ids: dict[str, str] = {}
    for key, payload in (
        ("u1", user("What is a session tree?", 1_767_600_000_000)),
        ("a1", assistant("A tree of **entries**; the leaf is where you are.", 1_767_600_001_000)),
        ("u2", user("How do branches happen?", 1_767_600_002_000)),
        ("a2", assistant("By editing or regenerating.", 1_767_600_003_000)),
    ):
        ids[key] = services.entry_append(session=s, payload=payload, author=owner).entry_id
    a = login("light")
    b = login("dark")
    open_session(a, server, s)

    # Regenerate the last reply: a sibling streams in, the 2/2 switcher and the tree show it.
    message_actions(a, f"#e-{ids['a2']}")
    a.locator(f"#e-{ids['a2']} [data-action=regenerate]").click()
    a.wait_for_selector("#chat-streaming article.streaming")
    a.wait_for_selector("#conversation .m-assistant:has-text('You said') .sib-pos:text-is('2/2')")
    s.refresh_from_db()
    regen = s.leaf_id
    assert regen != ids["a2"] and Entry.objects.get(session=s, entry_id=regen).parent_id == ids["u2"]
    assert a.locator(f"#tree-body [data-id='{ids['a2']}']").count() >= 1
    shot(a, "chat-regenerated-light")

    # B reads the first reply's branch (off the leaf path): it is not pulled away by what A does.
    open_session(b, server, s, f"?target={ids['a2']}")
    assert b.locator(f"#e-{ids['a2']}").count() == 1
    assert b.locator("#explorer[data-following]").count() == 0

    # Edit and resend u2: a sibling user message and its reply; A follows, B gets the tree and a notice.
    message_actions(a, f"#e-{ids['u2']}")
    a.locator(f"#e-{ids['u2']} [data-action=edit]").click()
    a.fill(f"#e-{ids['u2']} textarea[name=text]", "How do branches happen, briefly?")
    shot(a, "chat-edit-light")
    a.locator(f"#e-{ids['u2']} [data-action=resend]").click()
    a.wait_for_selector("#conversation .m-user:has-text('briefly') .sib-pos:text-is('2/2')")
    a.wait_for_selector("#conversation .m-assistant:has-text('briefly')")
    edited = Entry.objects.get(session=s, parent_id=ids["a1"], raw__contains="briefly").entry_id
    for page in (a, b):
        show_pane(page, "tree")
        page.wait_for_selector(f"#tree-body [data-id='{edited}']")
        show_pane(page, "conversation")
    b.wait_for_selector("#chat-notice:not([hidden])")
    assert b.locator(f"#e-{ids['a2']}").count() == 1 and "target=" in b.url  # still reading its branch
    shot(a, "chat-edited-light")
    shot(b, "chat-notice-dark")
    b.click("#chat-notice [data-jump-leaf]")
    b.wait_for_selector("#explorer[data-following]")
    b.wait_for_selector("#conversation .m-assistant:has-text('briefly')")
    assert b.locator("#chat-notice").is_hidden()

    # Model and thinking level: entries at the leaf.
    a.select_option("#chat-composer select[name=level]", "high")
    wait_until(
        a, "document.getElementById('explorer').dataset.seq === document.getElementById('session-live').dataset.seq"
    )
    for _ in range(50):
        if Entry.objects.filter(session=s, type="thinking_level_change").exists():
            break
        time.sleep(0.1)
    assert jsjson.loads(last_entry(s, type="thinking_level_change").raw)["thinkingLevel"] == "high"
    wait_until(b, "document.querySelector('#chat-composer select[name=level]').value === 'high'")

    # Compact with focus instructions: a compaction entry shows at the leaf for both viewers.
    a.click("#chat [data-action=compact]")
    a.fill("#compact-instructions", "keep the branching rules")
    shot(a, "chat-compact-light")
    a.click("#chat .chat-compact button.primary")
    for page in (a, b):
        page.wait_for_selector("#conversation .msg.m-compaction", timeout=40_000)
    shot(b, "chat-compacted-dark")

    # Switch back to the first reply's branch and summarize the branch being left.
    a.goto(f"{server}/sessions/{s.public_id}/?target={ids['a2']}")
    a.wait_for_selector("#chat-presence li")
    message_actions(a, f"#e-{ids['a2']}")
    a.locator(f"#e-{ids['a2']} [data-action=continue]").click()
    assert a.locator(f"#e-{ids['a2']} [data-summarize]").is_checked()
    a.fill(f"#e-{ids['a2']} input[name=instructions]", "what was decided")
    shot(a, "chat-switch-light")
    a.locator(f"#e-{ids['a2']} [data-action=go]").click()
    a.wait_for_selector("#conversation .msg.m-branch_summary", timeout=40_000)
    s.refresh_from_db()
    summary = Entry.objects.get(session=s, entry_id=s.leaf_id)
    assert summary.type == "branch_summary" and summary.parent_id == ids["a2"]
    assert a.locator("#explorer[data-following]").count() == 1
    shot(a, "chat-switched-light")

    # Continue from a user message: its text goes to the chat composer and its parent is the leaf.
    message_actions(a, f"#e-{ids['u2']}")
    a.locator(f"#e-{ids['u2']} [data-action=continue]").click()
    wait_until(a, "document.getElementById('composer-text').value === 'How do branches happen?'")
    wait_until(a, f"document.getElementById('chat-parent').value === '{ids['a1']}'")
    s.refresh_from_db()
    assert s.leaf_id == ids["a1"]


def test_new_chat_from_the_list(login, server):
    page = login()
    assert page.get_attribute("[data-new-chat]", "title") == "Start a new chat (n)"
    page.click("[data-new-chat]")
    page.wait_for_url(re.compile(r"/sessions/[^/]+/#composer$"))
    page.wait_for_selector("#chat-presence li")
    wait_until(page, "document.activeElement === document.getElementById('composer-text')")
    shot(page, "chat-new-light")
    page.keyboard.type("Hello from a new chat")  # the composer has the focus
    page.click("#chat-composer [data-action=send]")
    page.wait_for_selector("#chat-streaming article.streaming .stream-block")
    page.wait_for_selector("#conversation .m-assistant:has-text('Hello from a new chat')")
    page.wait_for_selector("#chat-streaming article", state="detached")
    s = Session.objects.get()
    assert s.owner.username == "alice" and s.first_message == "Hello from a new chat"
    assert s.public_id in page.url

    # From the list again, with its key: "n" while no field has the focus.
    page.goto(server + "/")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"/sessions/[^/]+/#composer$"))
    assert Session.objects.count() == 2
