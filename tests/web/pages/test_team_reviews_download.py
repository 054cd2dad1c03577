"""A team's reviews as CSV and JSON (/teams/<id>/reviews.csv|.json, GET /api/teams/{id}/reviews):
one row per verdict and per comment on the team's sessions, for any member of the team (404 for
anyone else), streamed in batches, CSV cells that a spreadsheet would run made inert."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest

from sessions_app.access import team_scores
from sessions_app.models import AuditRecord
from sessions_app.store import review_export, reviews
from tests.worlds import World

pytestmark = pytest.mark.django_db


def plant(world: World) -> dict[str, Any]:
    s, ids, rv = world.sessions["team"], world.ids["team"], world.users["reviewer"]
    team_scores.score_config_create(team=world.core, actor=world.users["admin"], name="accuracy", kind="numeric")
    team_scores.score_config_create(team=world.core, actor=world.users["admin"], name="tone", kind="categorical",
                                    choices="@calm, harsh")  # fmt: skip
    root = reviews.comment_create(session=s, author=rv, entry_id=ids["a1"], body='=HYPERLINK("http://x")')
    reply = reviews.comment_create(session=s, author=world.users["editor"], entry_id=ids["a1"], body="+1, @admin",
                                   parent_id=root.pk)  # fmt: skip
    reviews.comment_update(comment=root, session=s, user=rv, resolved=True)
    gone = reviews.comment_create(session=s, author=rv, entry_id=ids["u2"], body="secret draft")
    reviews.comment_delete(comment=gone, session=s, user=rv)
    verdict = reviews.verdict_create(session=s, reviewer=rv, entry_id=ids["a2"], verdict="flagged",
                                     body="-2 is wrong", scores={"accuracy": 3, "tone": "@calm"})  # fmt: skip
    # Another team's review is never in this team's file.
    other = world.sessions["other"]
    reviews.comment_create(session=other, author=world.users["other_admin"], entry_id=world.ids["other"]["a1"],
                           body="other team's note")  # fmt: skip
    return {"root": root, "reply": reply, "gone": gone, "verdict": verdict}


def download(world: World, name: str, fmt: str) -> tuple[int, str, Any]:
    response: Any = world.client(name).get(f"/teams/{world.core.public_id}/reviews.{fmt}")
    if response.status_code != 200:
        return response.status_code, "", response
    assert response.streaming
    return 200, b"".join(response.streaming_content).decode(), response


def test_the_csv_has_a_row_per_verdict_and_comment_made_inert(world):
    made = plant(world)
    status, text, response = download(world, "viewer", "csv")
    assert status == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(review_export.COLUMNS)
    by_id = {(r["kind"], r["id"]): r for r in rows}
    assert len(rows) == 4 and "other team's note" not in text
    root = by_id[("comment", str(made["root"].pk))]
    assert root["body"] == '\'=HYPERLINK("http://x")'  # a formula, made text
    assert root["resolved"] == "true" and root["author"] == "reviewer" and root["verdict"] == ""
    assert root["session_id"] == world.sessions["team"].public_id and root["session_name"] == "team session"
    assert root["entry_id"] == world.ids["team"]["a1"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", root["created"])
    reply = by_id[("comment", str(made["reply"].pk))]
    assert reply["body"] == "'+1, @admin" and reply["resolved"] == "true"  # the thread's flag
    gone = by_id[("comment", str(made["gone"].pk))]
    assert gone["body"] == "" and gone["deleted"] == "true" and "secret draft" not in text
    verdict = by_id[("verdict", str(made["verdict"].pk))]
    assert verdict["verdict"] == "flagged" and verdict["body"] == "'-2 is wrong" and verdict["resolved"] == ""
    assert json.loads(verdict["scores"]) == {"accuracy": 3, "tone": "@calm"}
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row.values())


def test_the_json_has_the_same_rows_unescaped(world):
    made = plant(world)
    status, text, response = download(world, "reviewer", "json")
    assert status == 200 and response["Content-Type"] == "application/json"
    data = json.loads(text)
    assert data["team"] == {"id": str(world.core.public_id), "name": "Core"}
    by_id = {(r["kind"], r["id"]): r for r in data["reviews"]}
    assert len(by_id) == 4
    assert by_id[("comment", made["root"].pk)]["body"] == '=HYPERLINK("http://x")'  # JSON needs no apostrophe
    assert by_id[("comment", made["root"].pk)]["resolved"] is True
    verdict = by_id[("verdict", made["verdict"].pk)]
    assert verdict["scores"] == {"accuracy": 3, "tone": "@calm"} and verdict["resolved"] is None
    assert set(verdict) == set(review_export.COLUMNS)
    audited = AuditRecord.objects.filter(action="team.reviews_export").last()
    assert audited is not None and audited.extra == {"format": "json"}


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_members_only_outsiders_get_404(world, fmt):
    plant(world)
    for name in ("viewer", "reviewer", "editor", "admin"):
        assert download(world, name, fmt)[0] == 200
    for name in ("other_admin", "owner"):
        assert download(world, name, fmt)[0] == 404
    assert world.client(None).get(f"/teams/{world.core.public_id}/reviews.{fmt}").status_code == 302  # sign in
    assert world.client("viewer").get(f"/teams/not-a-team/reviews.{fmt}").status_code == 404


def test_the_api_route(world):
    plant(world)
    url = f"/api/teams/{world.core.public_id}/reviews"
    response: Any = world.client("viewer").get(url, {"format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert len(list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))) == 4
    response = world.client("viewer").get(url)
    assert len(json.loads(b"".join(response.streaming_content))["reviews"]) == 4
    assert world.client("viewer").get(url, {"format": "xml"}).status_code == 400
    assert world.client("other_admin").get(url).status_code == 404
    assert world.client(None).get(url).status_code == 401


def test_rows_come_in_batches(world):
    s, ids = world.sessions["team"], world.ids["team"]
    for k in range(5):
        reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body=f"note {k}")
    reviews.verdict_create(session=s, reviewer=world.users["reviewer"], entry_id=ids["a2"], verdict="approved")
    batches = list(review_export.team_review_batches(team=world.core, batch=2))
    assert [len(b) for b in batches] == [1, 2, 2, 1]
    pieces = list(review_export.team_reviews_json(team=world.core, batch=2))
    assert len(pieces) == 6 and len(json.loads(b"".join(pieces))["reviews"]) == 6
    assert len(list(review_export.team_reviews_csv(team=world.core, batch=2))) == 5  # the header, then each batch


def test_the_team_page_and_the_queue_link_the_downloads(world):
    tid = world.core.public_id
    for url in (f"/teams/{tid}/", "/reviews/"):
        html = world.client("viewer").get(url).content.decode()
        assert f'href="/teams/{tid}/reviews.csv"' in html and f'href="/teams/{tid}/reviews.json"' in html
    assert f"/teams/{tid}/reviews" not in world.client("other_admin").get("/reviews/").content.decode()


def test_csv_safe():
    assert review_export.csv_safe("=1+2") == "'=1+2"
    assert review_export.csv_safe("@SUM(A1)") == "'@SUM(A1)"
    assert review_export.csv_safe("\t=x") == "'\t=x"
    assert review_export.csv_safe("plain = text") == "plain = text"
    assert review_export.csv_safe("  =cmd()") == "'  =cmd()"  # spaces before it do not disarm a formula
    assert review_export.csv_safe("\uff1dcmd()") == "'\uff1dcmd()"  # nor does the full-width sign
    assert review_export.csv_safe(None) == "" and review_export.csv_safe(False) == "false"
    assert review_export.csv_safe({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'
