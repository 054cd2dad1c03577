"""A verdict and the inbox badge in real browsers against a real daphne, desktop and phone: alice
asks bob to review and bob's header badge counts it without a reload; bob gives a verdict with a
note and a team score through the session page's form, anchored at the entry he selected; alice's
open page shows bob's latest verdict and the marker on that tree row live; bob's badge empties
(his verdict did the request). No console errors."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from sessions_app.access import team_scores, teams
from sessions_app.models import Verdict
from tests.browser.harness import make_user, show_pane, wait_until
from tests.browser.test_explorer_flows import branchy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BADGE = "document.getElementById('inbox-badge')"


def api_post(page, path: str, data: dict[str, object]) -> int:
    """A JSON POST from the signed-in page (the session cookie, and the CSRF token the page carries)."""
    script = f"""fetch({json.dumps(path)}, {{method: "POST", credentials: "same-origin",
        headers: {{"Content-Type": "application/json",
                   "X-CSRFToken": JSON.parse(document.body.getAttribute("hx-headers"))["x-csrftoken"]}},
        body: {json.dumps(json.dumps(data))}}}).then(r => r.status)"""
    return int(page.evaluate(script))


def test_verdict_form_and_live_inbox_badge(login, server):
    alice = login()
    make_user("bob", "bob-pw")
    owner = User.objects.get(username="alice")
    session, ids = branchy(owner)
    team = teams.team_create(name="Core", creator=owner)
    teams.member_invite(team=team, username="bob", role="reviewer", actor=owner)
    teams.session_move_to_team(session=session, team=team, actor=owner)
    team_scores.score_config_create(team=team, actor=owner, name="quality", kind="numeric", min_value=1, max_value=5)
    bob = login(username="bob")
    url = f"{server}/sessions/{session.public_id}/"
    alice.goto(url)
    bob.goto(f"{url}?target={ids['a1']}")
    for page in (alice, bob):
        page.wait_for_selector("#chat-presence li", state="attached")  # the session socket is up
    wait_until(bob, f"{BADGE}.dataset.inbox === '0'")  # the inbox socket is up and counted

    assert api_post(alice, f"/api/sessions/{session.public_id}/review-requests", {"reviewer": "bob"}) == 201
    wait_until(bob, f"{BADGE}.dataset.inbox === '1' && !{BADGE}.hidden")
    assert alice.evaluate(f"{BADGE}.dataset.inbox") == "0"  # the requester's own count is untouched

    show_pane(bob, "conversation")
    bob.click("#review-panel [data-action=verdict]")
    form = "#verdict-form"
    assert bob.get_attribute(f"{form} input[name=entry]", "value") == ids["a1"]
    bob.check(f"{form} input[value=changes_requested]")
    bob.fill(f"{form} textarea[name=body]", "Say **why** line by line")
    bob.fill(f"{form} input[name='score:quality']", "4")
    bob.click(f"{form} [data-action=give-verdict]")

    bob.wait_for_selector("#verdict-latest li[data-reviewer=bob][data-verdict=changes_requested]")
    assert "why" in bob.inner_text("#verdict-latest li[data-reviewer=bob] strong")
    row_mark = f'#tree-body .review-marks[data-marks-for="{ids["a1"]}"] .verdict-changes_requested'
    bob.wait_for_selector(row_mark, state="attached")
    show_pane(alice, "conversation")
    alice.wait_for_selector("#verdict-latest li[data-reviewer=bob]", state="attached")
    alice.wait_for_selector(row_mark, state="attached")
    assert "quality: 4" in alice.inner_text("#verdict-latest li[data-reviewer=bob]")
    assert alice.locator("#verdict-form").count() == 1  # alice (admin) may give one too
    wait_until(bob, f"{BADGE}.dataset.inbox === '0' && {BADGE}.hidden")

    v = Verdict.objects.get()
    assert (v.entry_id, v.verdict, v.scores, v.reviewer_username) == (
        ids["a1"],
        "changes_requested",
        {"quality": 4},
        "bob",
    )
