"""The verdict form on the session page: shown to reviewers and above with the team's score inputs,
anchored at the selected entry, posted with htmx (CSRF enforced) through the store's verdict_create;
the answer redraws the panel and carries the entry's tree marks; live frames carry them too."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.access import team_scores
from sessions_app.models import Verdict
from sessions_app.render import frames
from sessions_app.store import reviews
from tests.worlds import World

pytestmark = pytest.mark.django_db


def url(world: World) -> str:
    return f"/sessions/{world.sessions['team'].public_id}/verdicts/"


def page(world: World, name: str, **params: str) -> str:
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    return world.client(name).get(f"/sessions/{world.sessions['team'].public_id}/{query}").content.decode()


def scores(world: World) -> None:
    admin = world.users["admin"]
    team_scores.score_config_create(team=world.core, actor=admin, name="quality", kind="numeric", max_value=5)
    team_scores.score_config_create(team=world.core, actor=admin, name="safe", kind="boolean")
    team_scores.score_config_create(team=world.core, actor=admin, name="kind", kind="categorical", choices="bug,ok")


def test_reviewers_see_the_form_anchored_at_the_selected_entry(world):
    scores(world)
    a1 = world.ids["team"]["a1"]
    html = page(world, "reviewer", target=a1)
    form = re.search(r'<form id="verdict-form".*?</form>', html, re.S)
    assert form, "reviewer sees the verdict form"
    assert f'name="entry" value="{a1}"' in form.group(0)
    for name in ("quality", "safe", "kind"):
        assert f'name="score:{name}"' in form.group(0)
    assert 'max="5.0"' in form.group(0)
    leaf = page(world, "reviewer")
    assert f'name="entry" value="{world.ids["team"]["a2"]}"' in leaf  # no selection: the leaf read
    viewer = page(world, "viewer")
    assert 'id="review-panel"' in viewer and 'id="verdict-form"' not in viewer


def test_htmx_verdict_goes_through_the_store(world):
    scores(world)
    a1 = world.ids["team"]["a1"]
    client = world.client("reviewer", **{"HX-Request": "true"})
    data = {"entry": a1, "verdict": "changes_requested", "body": "fix **this**", "score:quality": "4",
            "score:safe": "false", "score:kind": "", }  # fmt: skip
    response = client.post(url(world), data)
    assert response.status_code == 200, response.content
    v = Verdict.objects.get()
    assert (v.entry_id, v.verdict, v.scores) == (a1, "changes_requested", {"quality": 4, "safe": False})
    html = response.content.decode()
    assert 'id="review-panel"' in html and 'data-reviewer="reviewer"' in html and "<strong>this</strong>" in html
    assert f'data-marks-for="{a1}"' in html and 'data-verdict="changes_requested"' in html
    assert 'id="review-live" hx-swap-oob="innerHTML"' in html
    # the tree row shows the marker on the next page view; the latest list names the reviewer
    assert re.search(
        rf'data-marks-for="{a1}"><span class="verdict-mark verdict-changes_requested"', page(world, "viewer")
    )


def test_bad_scores_and_verdicts_refused_with_reason(world):
    scores(world)
    client = world.client("reviewer", **{"HX-Request": "true"})
    a2 = world.ids["team"]["a2"]
    response = client.post(url(world), {"entry": a2, "verdict": "approved", "score:quality": "9"})
    assert response.status_code == 400 and "score 'quality' is 9, above its maximum 5" in response.content.decode()
    response = client.post(url(world), {"entry": a2, "verdict": "approved", "score:quality": "lots"})
    assert response.status_code == 400 and "score 'quality' must be a number" in response.content.decode()
    assert client.post(url(world), {"entry": a2, "verdict": "lgtm"}).status_code == 400
    assert client.post(url(world), {"entry": "nope", "verdict": "approved"}).status_code == 404
    assert not Verdict.objects.exists()


def test_permissions_and_csrf(world):
    a2 = world.ids["team"]["a2"]
    data = {"entry": a2, "verdict": "approved"}
    assert world.client("viewer").post(url(world), data).status_code == 403
    assert world.client("other_admin").post(url(world), data).status_code == 404
    assert world.client(None).post(url(world), data).status_code == 302  # to sign in
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(world.users["reviewer"])
    assert strict.post(url(world), data).status_code == 403
    assert not Verdict.objects.exists()
    plain = world.client("reviewer").post(url(world), data)
    assert plain.status_code == 302 and plain["Location"].endswith("#review-panel")
    assert Verdict.objects.count() == 1


def test_live_frame_carries_marks_and_latest(world):
    s, a1 = world.sessions["team"], world.ids["team"]["a1"]
    reviews.verdict_create(session=s, reviewer=world.users["editor"], entry_id=a1, verdict="flagged")
    html = frames.review(s, a1, {"review": True})
    assert f'data-marks-for="{a1}"' in html and 'data-verdict="flagged"' in html
    assert 'id="verdict-latest"' in html and 'data-reviewer="editor"' in html


def test_share_links_show_no_verdicts(world):
    from sessions_app.store import shares

    s = world.sessions["team"]
    reviews.verdict_create(
        session=s, reviewer=world.users["editor"], entry_id=world.ids["team"]["a1"], verdict="flagged"
    )
    _, token = shares.share_create(session=s, user=world.users["admin"], entry_id=None, expires_days=None)
    html = Client().get(f"/s/{token}/").content.decode()
    assert 'id="review-panel"' not in html and "data-verdict" not in html
