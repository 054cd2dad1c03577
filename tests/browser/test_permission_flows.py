"""Teams and share links used like a user would: invite a member, change their role and see what
they may do change; a branch share link works, stays inside its branch, and stops working once
revoked or expired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.models import ShareLink
from tests.browser.harness import make_user, show_pane
from tests.browser.shots import shot
from tests.browser.test_explorer_flows import branchy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def status(page, url: str) -> int:
    response = page.goto(url)
    assert response is not None
    return int(response.status)


def test_invite_change_role_remove(login, server):
    alice = login()
    make_user("bob", "bob-pw")
    session, _ = branchy(User.objects.get(username="alice"))

    alice.goto(server + "/teams/")
    alice.fill("input[name=name]", "Core")
    alice.click("[data-action=create-team]")
    alice.wait_for_selector("#members")
    team_url = alice.url
    alice.select_option("select[name=session]", session.public_id)
    alice.click("[data-action=move-session]")
    alice.wait_for_selector(".team-sessions a")
    alice.fill("#invite-form input[name=username]", "bob")
    alice.select_option("#invite-form select[name=role]", "viewer")
    alice.click("[data-action=invite]")
    alice.wait_for_selector("#member-bob")
    shot(alice, "team-members")

    bob = login(username="bob")
    bob.console.allow("status of 40[34]")  # what a viewer may not open, and then may not see
    detail = f"{server}/sessions/{session.public_id}/"
    assert status(bob, server + "/") == 200
    assert "Branchy session" in bob.inner_text("#session-table")  # the team's session is listed
    assert status(bob, detail) == 200
    assert status(bob, detail + "delete/") == 403  # a viewer reads but may not delete

    # alice makes bob an admin: the select posts on change (htmx) and the table is swapped in place
    alice.goto(team_url)
    with alice.expect_response(lambda r: "/role/" in r.url):
        alice.select_option("[data-role-select=bob]", "admin")
    alice.wait_for_selector("[data-role-select=bob] option[value=admin][selected]", state="attached")
    assert status(bob, detail + "delete/") == 200
    assert "Delete this session?" in bob.content()

    # removed: the session is gone for bob (a 404 that tells nothing)
    alice.goto(team_url)
    alice.click("#member-bob [data-action=remove-member]")
    alice.wait_for_selector("#members")
    assert alice.locator("#member-bob").count() == 0
    assert status(bob, detail) == 404
    assert "Branchy session" not in (bob.goto(server + "/") and bob.content())


def _share(page, server, session_id: str, entry: str | None, **extra: str) -> str:
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{server}/sessions/{session_id}/share/",
        form={"entry": entry or "", **extra},
        headers={"X-CSRFToken": token, "Referer": server + "/"},
    )
    assert response.status == 200, response.text()
    html = response.text()
    return str(html.split('id="share-url" class="mono" href="')[1].split('"')[0])


def test_branch_share_link(login, new_page, server):
    alice = login()
    session, ids = branchy(User.objects.get(username="alice"))
    url = _share(alice, server, session.public_id, ids["u2b"])  # the Go branch

    anon = new_page()
    anon.console.allow("status of 404")  # the links that stopped working
    assert status(anon, url) == 200
    shot(anon, "shared-branch")
    tree = anon.locator("#tree-body").text_content()
    conversation = anon.locator("#conversation").text_content()
    assert "And in Go?" in tree
    assert "bufio.Scanner" in conversation
    assert "And in Rust?" not in tree + conversation  # the sibling branch is not shown
    assert "serde_json" not in anon.content()
    # every link on the page stays inside the branch
    show_pane(anon, "tree")
    anon.click("#tree-body li.node a.txt >> text=How do I parse JSONL?")
    anon.wait_for_selector("#conversation .msg.target:has-text('How do I parse JSONL?')")
    assert "/s/" in anon.url and "serde_json" not in anon.content()
    assert status(anon, f"{url}?leaf={ids['a2a']}") == 404  # an entry of the other branch

    # revoked from /settings/shares: the link stops working
    alice.goto(server + "/settings/shares/")
    assert "branch at" in alice.inner_text("#share-table")
    alice.click("[data-action=revoke-share]")
    alice.wait_for_selector("#share-table >> text=revoked")
    assert status(anon, url) == 404

    # expired: likewise
    url = _share(alice, server, session.public_id, None, expires_days="1")
    assert status(anon, url) == 200
    assert "And in Rust?" in anon.locator("#tree-body").text_content()  # a whole-session link shows both branches
    ShareLink.objects.filter(revoked_at__isnull=True).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert status(anon, url) == 404
