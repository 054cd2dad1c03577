"""The HTML export with reviews (?comments=1, the API's comments=true; off by default): the review
comments and verdicts after the entries, in batches, each body the sanitised HTML stored when it
was written, under the export's own policy (render/export.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from sessions_app.access import team_scores
from sessions_app.models import AuditRecord
from sessions_app.store import reviews
from tests.web.pages.test_exports import ENTRIES, html_of
from tests.worlds import World
from tests.xss import ALL, assert_no_live_payload

pytestmark = pytest.mark.django_db

REVIEWS = re.compile(r'<script type="application/json" class="piweb-reviews">(.*?)</script>', re.S)


def review_records(html: str) -> list[dict[str, Any]]:
    return [record for block in REVIEWS.findall(html) for record in json.loads(block)]


def plant(world: World) -> dict[str, Any]:
    s, ids, rv = world.sessions["team"], world.ids["team"], world.users["reviewer"]
    for name, kind in (("=cmd", "numeric"), ("ok", "boolean")):  # the team's scores, one named like a formula
        team_scores.score_config_create(team=world.core, actor=world.users["admin"], name=name, kind=kind)
    root = reviews.comment_create(session=s, author=rv, entry_id=ids["a1"], body="why **this**? " + ALL)
    reply = reviews.comment_create(session=s, author=world.users["editor"], entry_id=ids["a1"], body="ok",
                                   parent_id=root.pk)  # fmt: skip
    gone = reviews.comment_create(session=s, author=rv, entry_id=ids["u2"], body="secret draft")
    reviews.comment_delete(comment=gone, session=s, user=rv)
    reviews.comment_update(comment=root, session=s, user=world.users["editor"], resolved=True)
    verdict = reviews.verdict_create(session=s, reviewer=rv, entry_id=ids["a2"], verdict="changes_requested",
                                     body="fix <script>x</script>", scores={"=cmd": 2, "ok": True})  # fmt: skip
    return {"root": root, "reply": reply, "gone": gone, "verdict": verdict}


def test_the_export_holds_no_reviews_unless_asked(world):
    plant(world)
    html = html_of(world.client("viewer").get(f"/sessions/{world.sessions['team'].public_id}/export.html"))
    assert ENTRIES.findall(html) and not REVIEWS.findall(html)
    assert "why \\u003cstrong\\u003ethis" not in html


def test_the_export_with_reviews_holds_threads_and_verdicts_from_stored_html(world):
    made = plant(world)
    sid, ids = world.sessions["team"].public_id, world.ids["team"]
    html = html_of(world.client("viewer").get(f"/sessions/{sid}/export.html?comments=1"))
    found = {(r["k"], r["id"]): r for r in review_records(html)}
    root = found[("c", made["root"].pk)]
    made["root"].refresh_from_db()
    assert root["h"] == made["root"].body_html and "<strong>this</strong>" in root["h"]
    assert root["e"] == ids["a1"] and root["a"] == "reviewer" and root["r"] is True and root["p"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", root["t"])
    reply = found[("c", made["reply"].pk)]
    assert reply["p"] == made["root"].pk and reply["r"] is True  # the thread's flag, on the reply too
    gone = found[("c", made["gone"].pk)]
    assert gone["h"] is None and "secret draft" not in html  # a tombstone
    verdict = found[("v", made["verdict"].pk)]
    assert verdict["v"] == "changes_requested" and verdict["s"] == {"=cmd": 2, "ok": True}
    assert "&lt;script&gt;" in verdict["h"]
    # The corpus stays inert: in the stored HTML, and in the file as a whole.
    for record in found.values():
        assert_no_live_payload(record["h"] or "")
    assert_no_live_payload(html)
    assert "</script><script>window" not in html
    assert len(re.findall(r"<script>(.*?)</script>", html, re.S)) == 1  # still only its own script
    audited = AuditRecord.objects.filter(action="session.export").last()
    assert audited is not None and audited.extra == {"format": "html", "reviews": True}


def test_reviews_come_in_batches(world, monkeypatch):
    s, ids = world.sessions["team"], world.ids["team"]
    for k in range(7):
        reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids["a1"], body=f"note {k}")
    real = reviews.comment_batches
    monkeypatch.setattr(reviews, "comment_batches", lambda *, session: real(session=session, batch=3))
    html = html_of(world.client("viewer").get(f"/sessions/{s.public_id}/export.html?comments=1"))
    assert [len(json.loads(b)) for b in REVIEWS.findall(html)] == [3, 3, 1]


def test_the_api_export_takes_the_option_and_outsiders_get_404(world):
    plant(world)
    sid = world.sessions["team"].public_id
    with_reviews = html_of(world.client("viewer").get(f"/api/sessions/{sid}/export.html?comments=true"))
    assert review_records(with_reviews) and "why \\u003cstrong\\u003ethis" in with_reviews
    assert not REVIEWS.findall(html_of(world.client("viewer").get(f"/api/sessions/{sid}/export.html")))
    assert world.client("other_admin").get(f"/sessions/{sid}/export.html?comments=1").status_code == 404
    assert world.client("other_admin").get(f"/api/sessions/{sid}/export.html?comments=true").status_code == 404


def test_the_session_page_offers_the_export_with_reviews(world):
    sid = world.sessions["team"].public_id
    html = world.client("viewer").get(f"/sessions/{sid}/").content.decode()
    assert f'href="/sessions/{sid}/export.html?comments=1" data-action="export-reviews"' in html
