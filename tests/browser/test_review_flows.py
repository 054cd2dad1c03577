"""Two reviewers review the same session live, in real browsers against a real daphne: a comment
posted by one appears under the message on the other's open page without a reload, a reply and a
resolution travel back; the tree row shows the count. Desktop and phone; no console errors."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.access import teams
from tests.browser.harness import make_user, show_pane, wait_until
from tests.browser.test_explorer_flows import branchy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def comment_on(page, message: str, body: str, *, reply: bool = False) -> None:
    show_pane(page, "conversation")
    pop = f"{message} section.threads > {'.thread details.reply-pop' if reply else 'details.comment-pop'}"
    page.click(f"{pop} > summary")
    page.fill(f"{pop} textarea", body)
    page.click(f"{pop} button.primary")


def test_two_reviewers_review_live(login, server):
    alice = login()
    make_user("bob", "bob-pw")
    owner = User.objects.get(username="alice")
    session, ids = branchy(owner)
    team = teams.team_create(name="Core", creator=owner)
    teams.member_invite(team=team, username="bob", role="reviewer", actor=owner)
    teams.session_move_to_team(session=session, team=team, actor=owner)
    bob = login(username="bob")
    url = f"{server}/sessions/{session.public_id}/"
    for page in (alice, bob):
        page.goto(url)
        page.wait_for_selector("#chat-presence li", state="attached")  # the socket is up
    a1 = f'#conversation .msg[data-id="{ids["a1"]}"]'

    comment_on(bob, a1, "Is **line by line** enough?")
    bob.wait_for_selector(f"{a1} .comment strong:text('line by line')", state="attached")
    alice.wait_for_selector(f"{a1} .comment strong:text('line by line')", state="attached")
    assert "bob" in alice.inner_text(f"{a1} .comment .who")

    comment_on(alice, a1, "Yes, for JSONL.", reply=True)
    bob.wait_for_selector(f"{a1} .comment.reply", state="attached")
    show_pane(bob, "conversation")
    bob.click(f"{a1} [data-action=resolve]")
    alice.wait_for_selector(f"{a1} .thread.resolved", state="attached")
    wait_until(bob, f"document.querySelector('{a1} .thread.resolved') !== null")
