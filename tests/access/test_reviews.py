"""Team review over the REST API: comment threads, verdicts, review requests, the queue; each
route's permission matrix (roles, outsiders 404, signed out 401, read tokens refused), the XSS
corpus on bodies, tombstones, and the audit records every review action leaves."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from sessions_app.access import team_scores
from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import AuditRecord, Entry, ReviewComment
from tests.worlds import World
from tests.xss import ALL, PAYLOADS, assert_no_live_payload

pytestmark = pytest.mark.django_db

EVERYONE = ("viewer", "reviewer", "editor", "admin", "owner", "other_admin")


def api(world: World, name: str | None) -> Client:
    return world.client(name)


def post(client: Client, path: str, data: dict[str, Any]) -> Any:
    return client.post(path, data, content_type="application/json")


def patch(client: Client, path: str, data: dict[str, Any]) -> Any:
    return client.patch(path, data, content_type="application/json")


def comments_url(world: World, key: str = "team") -> str:
    return f"/api/sessions/{world.sessions[key].public_id}/comments"


def reviews_url(world: World, key: str = "team") -> str:
    return f"/api/sessions/{world.sessions[key].public_id}/reviews"


def requests_url(world: World, key: str = "team") -> str:
    return f"/api/sessions/{world.sessions[key].public_id}/review-requests"


def comment(world: World, name: str, body: str = "looks off", key: str = "team", **extra: Any) -> int:
    response = post(
        api(world, name), comments_url(world, key), {"entryId": world.ids[key]["a1"], "body": body, **extra}
    )
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def listed(world: World, name: str = "admin", key: str = "team") -> list[dict[str, Any]]:
    response = api(world, name).get(comments_url(world, key))
    assert response.status_code == 200
    return list(response.json()["comments"])


# --- permission matrix --------------------------------------------------------------------------

# Team session of "core": viewers read, reviewers and above write; outsiders (owner, other_admin) 404.
WRITE = {"viewer": 403, "reviewer": 201, "editor": 201, "admin": 201, "owner": 404, "other_admin": 404}
READ = {"viewer": 200, "reviewer": 200, "editor": 200, "admin": 200, "owner": 404, "other_admin": 404}


@pytest.mark.parametrize("name", EVERYONE)
def test_post_routes_follow_roles(world, name):
    a1 = world.ids["team"]["a1"]
    client = api(world, name)
    for url, data in [
        (comments_url(world), {"entryId": a1, "body": "hm"}),
        (reviews_url(world), {"entryId": a1, "verdict": "approved"}),
        (requests_url(world), {"reviewer": "editor"}),
    ]:
        response = post(client, url, data)
        assert response.status_code == WRITE[name], (url, response.content)
        assert "message" in response.json() or response.status_code == 201


@pytest.mark.parametrize("name", EVERYONE)
def test_get_routes_follow_roles(world, name):
    client = api(world, name)
    for url in (comments_url(world), reviews_url(world)):
        assert client.get(url).status_code == READ[name], url


def test_personal_session_is_its_owners_alone(world):
    assert comment(world, "owner", key="personal")
    for name in ("admin", "reviewer", "other_admin"):
        response = post(api(world, name), comments_url(world, "personal"), {"entryId": "x", "body": "x"})
        assert response.status_code == 404
        assert api(world, name).get(comments_url(world, "personal")).status_code == 404


def test_outsider_cannot_reach_a_comment_by_id(world):
    cid = comment(world, "reviewer")
    for method, data in (("patch", {"resolved": True}), ("delete", None)):
        response = getattr(api(world, "other_admin"), method)(
            f"/api/comments/{cid}", data, content_type="application/json"
        )
        assert response.status_code == 404
    assert api(world, "admin").patch("/api/comments/999999", {}, content_type="application/json").status_code == 404
    assert listed(world)[0]["body"] == "looks off"
    assert listed(world)[0]["resolved"] is False


def test_signed_out_gets_401(world):
    anonymous = api(world, None)
    assert anonymous.get(comments_url(world)).status_code == 401
    assert post(anonymous, comments_url(world), {"entryId": "x", "body": "x"}).status_code == 401
    assert anonymous.get("/api/reviews").status_code == 401


def test_read_token_cannot_write_reviews(world):
    _, token = api_token_create(user=world.users["admin"], scope="read")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    a1 = world.ids["team"]["a1"]
    assert client.get(comments_url(world)).status_code == 200
    assert client.get("/api/reviews").status_code == 200
    for url, data in [
        (comments_url(world), {"entryId": a1, "body": "hm"}),
        (reviews_url(world), {"entryId": a1, "verdict": "flagged"}),
        (requests_url(world), {"team": "Core"}),
    ]:
        assert post(client, url, data).status_code == 403
    cid = comment(world, "admin")
    assert patch(client, f"/api/comments/{cid}", {"resolved": True}).status_code == 403
    assert listed(world)[0]["resolved"] is False


# --- comments ---------------------------------------------------------------------------------


def test_comment_contract_threads_and_replies(world):
    root = comment(world, "reviewer", "first **point**")
    reply = comment(world, "editor", "agreed", parentId=root)
    deeper = comment(world, "admin", "me too", parentId=reply)  # a reply to a reply joins the thread
    rows = listed(world, "viewer")
    assert [r["id"] for r in rows] == [root, reply, deeper]
    assert rows[0] == {
        "id": root,
        "entryId": world.ids["team"]["a1"],
        "parentId": None,
        "author": "reviewer",
        "body": "first **point**",
        "created": rows[0]["created"],
        "resolved": False,
        "edited": False,
        "deleted": False,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", rows[0]["created"])
    assert rows[1]["parentId"] == root and rows[2]["parentId"] == root
    assert ReviewComment.objects.get(pk=root).body_html == "<p>first <strong>point</strong></p>\n"


@pytest.mark.parametrize(
    ("data", "status", "field"),
    [
        ({"entryId": "nope", "body": "x"}, 404, None),
        ({"body": "x"}, 422, None),
        ({"entryId": "A1", "body": "   "}, 400, "body"),
        ({"entryId": "A1", "body": "x" * 20_001}, 400, "body"),
        ({"entryId": "A1", "body": "x", "parentId": 999999}, 404, "parentId"),
        ({"entryId": "A1", "body": 5}, 422, None),
    ],
)
def test_bad_comment_says_what(world, data, status, field):
    data = {k: (world.ids["team"]["a1"] if v == "A1" else v) for k, v in data.items()}
    response = post(api(world, "reviewer"), comments_url(world), data)
    assert response.status_code == status, response.content
    if field:
        assert response.json()["extra"]["field"] == field
    assert not ReviewComment.objects.exists()


def test_reply_must_be_on_its_threads_entry(world):
    root = comment(world, "reviewer")
    data = {"entryId": world.ids["team"]["u2"], "body": "x", "parentId": root}
    response = post(api(world, "reviewer"), comments_url(world), data)
    assert response.status_code == 400
    assert response.json()["extra"]["expected"] == world.ids["team"]["a1"]


def test_reply_cannot_reach_another_sessions_comment(world):
    theirs = comment(world, "other_admin", key="other")
    data = {"entryId": world.ids["team"]["a1"], "body": "x", "parentId": theirs}
    assert post(api(world, "reviewer"), comments_url(world), data).status_code == 404


def test_edit_own_only_history_in_audit(world):
    cid = comment(world, "reviewer", "v1")
    assert patch(api(world, "admin"), f"/api/comments/{cid}", {"body": "hijack"}).status_code == 403
    response = patch(api(world, "reviewer"), f"/api/comments/{cid}", {"body": "v2 @editor"})
    assert response.status_code == 200
    assert response.json()["body"] == "v2 @editor" and response.json()["edited"] is True
    edit = AuditRecord.objects.get(action="comment.edit")
    assert (edit.before, edit.after, edit.actor_username) == ({"body": "v1"}, {"body": "v2 @editor"}, "reviewer")
    assert edit.session_id == world.sessions["team"].public_id
    assert ReviewComment.objects.get(pk=cid).mentions == ["editor"]


def test_delete_leaves_a_tombstone_and_the_replies(world):
    root = comment(world, "reviewer", "secret")
    reply = comment(world, "editor", "answer", parentId=root)
    assert api(world, "editor").delete(f"/api/comments/{root}").status_code == 403
    assert api(world, "reviewer").delete(f"/api/comments/{root}").status_code == 204
    rows = listed(world)
    assert rows[0]["id"] == root and rows[0]["body"] is None and rows[0]["deleted"] is True
    assert rows[1]["id"] == reply and rows[1]["body"] == "answer"
    assert ReviewComment.objects.get(pk=root).body_html == ""
    assert patch(api(world, "reviewer"), f"/api/comments/{root}", {"body": "back"}).status_code == 409
    assert AuditRecord.objects.get(action="comment.delete").before == {"body": "secret"}


def test_who_may_resolve_and_reopen(world):
    root = comment(world, "reviewer")
    reply = comment(world, "admin", "reply", parentId=root)
    url = f"/api/comments/{root}"
    assert patch(api(world, "viewer"), url, {"resolved": True}).status_code == 403
    other_reviewer = world.users["viewer"]
    other_reviewer.memberships.update(role="reviewer")  # a reviewer who is not the thread's author
    assert patch(api(world, "viewer"), url, {"resolved": True}).status_code == 403
    assert patch(api(world, "reviewer"), url, {"resolved": True}).status_code == 200  # its author
    assert all(r["resolved"] for r in listed(world))  # the thread's state, shown on every comment
    assert patch(api(world, "editor"), f"/api/comments/{reply}", {"resolved": False}).status_code == 200  # editors
    assert not any(r["resolved"] for r in listed(world))
    # whoever requested a review may too
    assert post(api(world, "viewer"), requests_url(world), {"reviewer": "editor"}).status_code == 201
    assert patch(api(world, "viewer"), url, {"resolved": True}).status_code == 200
    actions = list(AuditRecord.objects.filter(action__startswith="comment.re").values_list("action", flat=True))
    assert sorted(actions) == ["comment.reopen", "comment.resolve", "comment.resolve"]


def test_xss_corpus_in_bodies_is_stored_sanitised(world):
    for payload in [*PAYLOADS, ALL]:
        comment(world, "reviewer", payload)
    data = {"entryId": world.ids["team"]["a1"], "verdict": "flagged", "body": ALL}
    assert post(api(world, "reviewer"), reviews_url(world), data).status_code == 201
    for row in ReviewComment.objects.all():
        assert_no_live_payload(row.body_html)
    response = api(world, "viewer").get(comments_url(world))
    assert response["Content-Type"].startswith("application/json")
    assert [r["body"] for r in response.json()["comments"]] == [*PAYLOADS, ALL]  # kept exactly, as data


def test_mentions_only_team_members(world):
    cid = comment(world, "reviewer", "@editor and @other_admin, cc @viewer. @nobody")
    assert ReviewComment.objects.get(pk=cid).mentions == ["editor", "viewer"]


def test_comments_are_not_entries(world):
    session = world.sessions["team"]
    before = Entry.objects.filter(session=session).count()
    export = api(world, "admin").get(f"/api/sessions/{session.public_id}/export.jsonl")
    jsonl = export.getvalue()
    comment(world, "reviewer", "note")
    post(api(world, "reviewer"), reviews_url(world), {"entryId": world.ids["team"]["a2"], "verdict": "approved"})
    assert Entry.objects.filter(session=session).count() == before
    again = api(world, "admin").get(f"/api/sessions/{session.public_id}/export.jsonl")
    assert again.getvalue() == jsonl and jsonl


# --- verdicts -------------------------------------------------------------------------------------


def verdict(world: World, name: str, kind: str, key: str = "a2", **extra: Any) -> Any:
    data = {"entryId": world.ids["team"][key], "verdict": kind, **extra}
    return post(api(world, name), reviews_url(world), data)


def test_verdicts_latest_per_reviewer(world):
    admin = world.users["admin"]
    team_scores.score_config_create(team=world.core, actor=admin, name="quality", kind="numeric", max_value=5)
    team_scores.score_config_create(team=world.core, actor=admin, name="safe", kind="boolean")
    team_scores.score_config_create(team=world.core, actor=admin, name="kind", kind="categorical", choices="bug,ok")
    assert verdict(world, "reviewer", "changes_requested", body="fix *this*").status_code == 201
    scores = {"quality": 2, "safe": False, "kind": "bug"}
    assert verdict(world, "editor", "flagged", key="a1", scores=scores).status_code == 201
    assert verdict(world, "reviewer", "approved").status_code == 201
    body = api(world, "viewer").get(reviews_url(world)).json()
    assert [v["verdict"] for v in body["reviews"]] == ["changes_requested", "flagged", "approved"]
    latest = {v["reviewer"]: v for v in body["latest"]}
    assert latest["reviewer"]["verdict"] == "approved"
    assert latest["editor"]["scores"] == {"quality": 2, "safe": False, "kind": "bug"}
    assert latest["editor"]["entryId"] == world.ids["team"]["a1"]
    assert body["reviews"][0]["body"] == "fix *this*"
    assert AuditRecord.objects.filter(action="verdict.create").count() == 3


@pytest.mark.parametrize(
    ("extra", "status", "field"),
    [
        ({"verdict": "lgtm"}, 400, "verdict"),
        ({"verdict": "approved", "scores": {"q": [1]}}, 400, "scores"),
        ({"verdict": "approved", "scores": {"": 1}}, 400, "scores"),
        ({"verdict": "approved", "entryId": "missing"}, 404, None),
    ],
)
def test_bad_verdict_says_what(world, extra, status, field):
    response = post(api(world, "reviewer"), reviews_url(world), {"entryId": world.ids["team"]["a2"], **extra})
    assert response.status_code == status, response.content
    if field:
        assert response.json()["extra"]["field"] == field
    assert api(world, "admin").get(reviews_url(world)).json()["reviews"] == []


# --- review requests and the queue -------------------------------------------------------------


def queue(world: World, name: str, **params: Any) -> dict[str, Any]:
    response = api(world, name).get("/api/reviews", params)
    assert response.status_code == 200
    return dict(response.json())


def test_requests_only_for_team_sessions_and_members(world):
    response = post(api(world, "owner"), requests_url(world, "personal"), {"reviewer": "admin"})
    assert response.status_code == 409
    response = post(api(world, "admin"), requests_url(world), {"reviewer": "other_admin"})
    assert response.status_code == 400 and response.json()["extra"]["field"] == "reviewer"
    response = post(api(world, "admin"), requests_url(world), {"team": "Other"})
    assert response.status_code == 400
    assert post(api(world, "admin"), requests_url(world), {}).status_code == 400
    assert post(api(world, "admin"), requests_url(world), {"reviewer": "editor", "entryId": "x"}).status_code == 404
    # nothing was granted: the outsider still cannot see the session
    assert api(world, "other_admin").get(comments_url(world)).status_code == 404
    assert queue(world, "other_admin")["counts"]["requested"] == 0


def test_personal_request_done_at_that_reviewers_verdict(world):
    data = {"reviewer": "editor", "entryId": world.ids["team"]["a2"]}
    assert post(api(world, "admin"), requests_url(world), data).status_code == 201
    mine = queue(world, "editor")
    assert mine["counts"]["requested"] == 1
    assert mine["requested"][0]["requestedBy"] == "admin" and mine["requested"][0]["entryId"] == data["entryId"]
    assert queue(world, "reviewer")["counts"]["requested"] == 0
    assert verdict(world, "reviewer", "approved").status_code == 201  # someone else's verdict: still open
    assert queue(world, "editor")["counts"]["requested"] == 1
    assert verdict(world, "editor", "approved").status_code == 201
    assert queue(world, "editor")["counts"]["requested"] == 0
    requests = api(world, "admin").get(reviews_url(world)).json()["requests"]
    assert requests[0]["done"] is True


def test_team_request_done_at_first_verdict_by_any_member(world):
    assert post(api(world, "admin"), requests_url(world), {"team": "Core"}).status_code == 201
    assert queue(world, "reviewer")["counts"]["requested"] == 1
    assert queue(world, "editor")["counts"]["requested"] == 1
    assert queue(world, "viewer")["counts"]["requested"] == 0  # viewers cannot give verdicts
    assert verdict(world, "reviewer", "flagged").status_code == 201
    assert queue(world, "editor")["counts"]["requested"] == 0


def test_queue_sections_counts_filters_paging(world):
    threads = [comment(world, "reviewer", f"thread {k}") for k in range(5)]
    resolved = threads.pop()
    patch(api(world, "reviewer"), f"/api/comments/{resolved}", {"resolved": True})
    verdict(world, "editor", "flagged")
    verdict(world, "editor", "approved")
    comment(world, "owner", "mine alone", key="personal")
    q = queue(world, "reviewer")
    assert q["counts"] == {"requested": 0, "threads": 4, "flagged": 1, "approved": 1}
    assert [t["id"] for t in q["threads"]] == threads[::-1]  # newest first
    page = queue(world, "reviewer", section="threads", offset=1, limit=2)
    assert [t["id"] for t in page["threads"]] == threads[::-1][1:3]
    assert "flagged" not in page and page["counts"]["threads"] == 4
    filtered = queue(world, "reviewer", session=world.sessions["other"].public_id)
    assert filtered["counts"] == {"requested": 0, "threads": 0, "flagged": 0, "approved": 0}
    assert queue(world, "other_admin")["counts"] == {"requested": 0, "threads": 0, "flagged": 0, "approved": 0}
    assert queue(world, "owner")["counts"]["threads"] == 1
    assert api(world, "reviewer").get("/api/reviews", {"section": "bogus"}).status_code == 422


def test_an_author_demoted_to_viewer_can_no_longer_edit_or_delete(world):
    cid = comment(world, "reviewer", "mine")
    world.users["reviewer"].memberships.update(role="viewer")
    assert patch(api(world, "reviewer"), f"/api/comments/{cid}", {"body": "changed"}).status_code == 403
    assert api(world, "reviewer").delete(f"/api/comments/{cid}").status_code == 403
    assert listed(world)[0]["body"] == "mine"
