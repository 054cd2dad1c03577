"""The /reviews/ page: the signed-in user's queue, by section, with counts, filters and paging;
nothing from sessions they cannot read; bodies escaped."""

from __future__ import annotations

import re

import pytest

from sessions_app.store import reviews
from tests.worlds import World
from tests.xss import PAYLOADS, assert_no_live_payload

pytestmark = pytest.mark.django_db


def count(html: str, section: str) -> int:
    found = re.search(rf'data-count="{section}">[^<]*<span [^>]*class="badge"[^>]*>(\d+)</span>', html)
    assert found, section
    return int(found.group(1))


def thread(world: World, name: str, body: str, key: str = "team") -> int:
    session = world.sessions[key]
    return reviews.comment_create(
        session=session, author=world.users[name], entry_id=world.ids[key]["a1"], body=body
    ).pk


def test_signed_out_goes_to_sign_in(world):
    response = world.client(None).get("/reviews/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_sections_and_counts(world):
    team = world.sessions["team"]
    reviews.request_create(session=team, requester=world.users["admin"], reviewer="editor")
    mine = thread(world, "editor", "please check")
    reviews.verdict_create(session=team, reviewer=world.users["reviewer"], entry_id=world.ids["team"]["a2"],
                           verdict="flagged", body="risky")  # fmt: skip
    html = world.client("editor").get("/reviews/").content.decode()
    assert (count(html, "requested"), count(html, "threads"), count(html, "flagged")) == (1, 1, 1)
    assert f"#comment-{mine}" in html and "risky" in html
    outsider = world.client("other_admin").get("/reviews/").content.decode()
    assert count(outsider, "requested") == count(outsider, "threads") == count(outsider, "flagged") == 0
    assert "please check" not in outsider and "risky" not in outsider


def test_section_filter_and_paging(world):
    ids = [thread(world, "reviewer", f"thread number {k}") for k in range(25)]
    client = world.client("reviewer")
    first = client.get("/reviews/", {"section": "threads"}).content.decode()
    assert count(first, "threads") == 25
    assert f"#comment-{ids[-1]}" in first and f"#comment-{ids[4]}" not in first
    assert 'href="?section=threads&amp;page=2"' in first
    second = client.get("/reviews/", {"section": "threads", "page": "2"}).content.decode()
    assert f"#comment-{ids[4]}" in second and f"#comment-{ids[-1]}" not in second
    assert 'id="section-flagged"' not in second
    other = client.get("/reviews/", {"session": world.sessions["other"].public_id}).content.decode()
    assert count(other, "threads") == 0
    assert client.get("/reviews/", {"section": "bogus", "page": "x"}).status_code == 200


def test_bodies_are_escaped(world):
    for payload in PAYLOADS:
        thread(world, "reviewer", payload)
    assert_no_live_payload(world.client("reviewer").get("/reviews/").content.decode())


def test_header_badge_and_queue_counts_are_live_targets(world):
    page = world.client("reviewer").get("/").content.decode()
    assert 'id="inbox-badge"' in page and 'ws-connect="/ws/inbox/"' in page
    queue = world.client("reviewer").get("/reviews/?session=abc").content.decode()
    assert 'ws-connect="/ws/inbox/?queue=1&amp;session=abc"' in queue
    assert 'id="queue-count-requested"' in queue
    assert "ws/inbox" not in world.client(None).get("/accounts/login/").content.decode()
