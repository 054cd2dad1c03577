"""Issue 14's smaller defects, as a user meets them in Chromium at both sizes: labelling keeps the
reader on the leaf with a chip, rename swaps the header in place, the header's message count follows
the chat, a failed compaction closes its popover and says why, a fork links back to its source, a
form error shows in the form, the audit log keeps its times on one line."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from sessions_app.access import teams
from sessions_app.models import Entry, Session
from sessions_app.store import services
from tests.browser.harness import message_actions, wait_until
from tests.browser.shots import shot
from tests.builders import assistant, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_session(page: Any, server: str, s: Session) -> None:
    page.goto(f"{server}/sessions/{s.public_id}/")
    page.wait_for_selector("#chat-presence li")  # the socket is up and the snapshot arrived


def head_box(page: Any) -> dict[str, float]:
    return dict(page.evaluate("(() => { const r = document.querySelector('.session-head').getBoundingClientRect();"
                              " return {top: r.top, height: r.height, width: r.width}; })()"))  # fmt: skip


def test_label_rename_count_compaction_and_fork(login, server, viewport):
    owner = User.objects.get(username="alice")
    s = services.session_create(owner=owner, name="Header demo")
    services.entry_append(session=s, payload=user("How do trees branch?", 1_767_600_000_000), author=owner)
    answer = services.entry_append(session=s, payload=assistant("By appending.", 1_767_600_001_000), author=owner)
    page = login("light")
    open_session(page, server, s)
    assert page.inner_text("[data-message-count]") == "2 messages"

    # Label the answer: a chip on it, no "Label … on …" card, and the reader stays on the leaf.
    message_actions(page, f"#e-{answer.entry_id}")
    page.locator(f"#e-{answer.entry_id} summary[data-action=label]").click()
    page.fill(f"#e-{answer.entry_id} .label-form input[name=label]", "key idea")
    page.locator(f"#e-{answer.entry_id} .label-form button.primary").click()
    page.wait_for_selector(f"#e-{answer.entry_id} .badge:has-text('key idea')")
    label = Entry.objects.get(session=s, type="label")
    s.refresh_from_db()
    assert s.leaf_id == label.entry_id  # stored as pi does
    assert page.locator(".off-leaf-note").count() == 0
    assert page.locator(f"#e-{label.entry_id}").count() == 0 and "Label key idea on" not in page.content()
    assert page.locator(f"#e-{answer.entry_id} .pill:has-text('leaf')").count() == 1
    shot(page, "labelled-light")

    # Rename: the title changes in place, the form closes, the header keeps its size.
    before = head_box(page)
    page.click("#session-title summary[data-action=rename]")
    page.fill("#session-title input[name=name]", "Renamed in place")
    page.click("#session-title form button.primary")
    page.wait_for_selector("#session-title h1.title:has-text('Renamed in place')")
    assert page.evaluate("document.querySelector('#session-title details.rename').open") is False
    assert page.title().startswith("Renamed in place")
    after = head_box(page)
    assert abs(after["height"] - before["height"]) <= 2 and abs(after["width"] - before["width"]) <= 2, (before, after)
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    shot(page, "renamed-light")
    # An empty name: the form stays open with the error in it.
    page.click("#session-title summary[data-action=rename]")
    page.fill("#session-title input[name=name]", " ")
    page.console.allow(r"status of 422")
    page.evaluate("document.querySelector('#session-title input[name=name]').removeAttribute('required')")
    page.click("#session-title form button.primary")
    page.wait_for_selector("#session-title .form-errors:has-text('A name is required.')")
    assert page.evaluate("document.querySelector('#session-title details.rename').open") is True
    shot(page, "rename-error-light")
    page.click("#session-title summary[data-action=rename]")  # close it again

    # A message sent here: the header's count follows the socket (the question and the reply).
    page.fill("#composer-text", "Short one please")
    page.click("#chat-composer [data-action=send]")
    wait_until(page, "document.querySelector('[data-message-count]').textContent === '4 messages'", timeout=30)
    page.wait_for_selector("#chat-streaming article", state="detached")
    settled = (
        "document.querySelectorAll('#conversation .m-assistant').length === 2"
        " && document.getElementById('explorer').dataset.seq"
        " === document.getElementById('session-live').dataset.seq"
    )
    wait_until(page, settled)  # the explorer has followed the reply: the menus below stay open

    # A fork links back to where it came from.
    message_actions(page, f"#e-{answer.entry_id}")
    page.locator(f"#e-{answer.entry_id} [data-action=fork]").click()
    page.wait_for_selector(".fork-note a")
    fork = Session.objects.get(parent_session=s)
    assert f"/sessions/{fork.public_id}/" in page.url
    assert page.get_attribute(".fork-note a", "href") == f"/sessions/{s.public_id}/"
    assert "Renamed in place" in page.inner_text(".fork-note")
    shot(page, "fork-header-light")

    # Dark theme: the same screens, to look at.
    dark = login("dark")
    open_session(dark, server, s)
    dark.wait_for_selector(f"#e-{answer.entry_id} .badge")
    shot(dark, "labelled-dark")
    dark.click("#session-title summary[data-action=rename]")
    dark.fill("#session-title input[name=name]", "Renamed in the dark")
    dark.click("#session-title form button.primary")
    dark.wait_for_selector("#session-title h1.title:has-text('Renamed in the dark')")
    dark.wait_for_selector("#conversation .rename-note:has-text('Renamed to “Renamed in the dark”')")  # live
    assert dark.locator(".off-leaf-note").count() == 0
    shot(dark, "renamed-dark")
    dark.goto(f"{server}/sessions/{fork.public_id}/")
    dark.wait_for_selector(".fork-note a")
    shot(dark, "fork-header-dark")


def test_a_failed_compaction_closes_its_popover_and_says_why(login, server):
    s = services.session_create(owner=User.objects.get(username="alice"))
    page = login("light")
    open_session(page, server, s)
    page.console.allow(r"Error Code 409 from /sessions/.*/chat/compact/|status of 409")
    page.click("#chat [data-action=compact]")
    page.click("#chat .chat-compact button.primary")
    page.wait_for_selector("#toast.show.bad:has-text('Nothing to compact')")
    assert page.evaluate("document.querySelector('#chat details.chat-compact').open") is False


def test_adding_an_unknown_user_shows_the_error_in_the_form(login, server):
    alice = User.objects.get(username="alice")
    team = teams.team_create(name="Browser team", creator=alice)
    page = login("light")
    page.goto(f"{server}/teams/{team.public_id}/")
    page.console.allow(r"status of 422")
    page.fill("#invite-form input[name=username]", "nobody-here")
    page.click("#invite-form [data-action=invite]")
    page.wait_for_selector("#invite .form-errors:has-text(\"No user 'nobody-here'\")")
    assert page.url.endswith(f"/teams/{team.public_id}/")  # still the page, not a bare error
    assert page.input_value("#invite-form input[name=username]") == "nobody-here"
    shot(page, "invite-error-light")
    User.objects.create_user("somebody")
    page.fill("#invite-form input[name=username]", "somebody")
    page.click("#invite-form [data-action=invite]")
    page.wait_for_selector("#member-somebody")
    assert page.locator("#invite .form-errors").count() == 0
    assert page.input_value("#invite-form input[name=username]") == ""


def test_the_audit_log_keeps_times_on_one_line_and_shows_fields(login, server):
    alice = User.objects.get(username="alice")
    s = services.session_create(owner=alice, name="Audited")
    services.session_rename(session=s, name="Audited again", author=alice)
    page = login("light", username="carol")
    User.objects.get(username="carol").groups.add(Group.objects.get_or_create(name="auditors")[0])
    page.goto(f"{server}/audit/")
    page.wait_for_selector("table.audit-log td.when time")
    heights = page.evaluate(
        "Array.from(document.querySelectorAll('table.audit-log td.when time')).map(t => t.getClientRects().length)"
    )
    assert heights and set(heights) == {1}, heights  # one line box each: never wrapped
    assert "{'" not in page.inner_text("table.audit-log")
    shot(page, "audit-light")
