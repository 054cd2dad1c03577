"""Team slugs (made from the name, edited by admins, naming the team in review requests) and team
score configs (managed by admins on the team page; a verdict's scores checked against them)."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.access import team_scores, teams
from sessions_app.models import AuditRecord, ReviewRequest, ScoreConfig, Verdict
from tests.worlds import World

pytestmark = pytest.mark.django_db


def post_json(world: World, name: str, path: str, data: dict[str, Any]) -> Any:
    return world.client(name).post(path, data, content_type="application/json")


def verdict(world: World, name: str, scores: Any, key: str = "team") -> Any:
    data = {"entryId": world.ids[key]["a2"], "verdict": "approved", "scores": scores}
    return post_json(world, name, f"/api/sessions/{world.sessions[key].public_id}/reviews", data)


def define(world: World) -> None:
    admin, core = world.users["admin"], world.core
    team_scores.score_config_create(team=core, actor=admin, name="quality", kind="numeric", min_value=1, max_value=5)
    team_scores.score_config_create(team=core, actor=admin, name="kind", kind="categorical", choices="bug, style")
    team_scores.score_config_create(team=core, actor=admin, name="safe", kind="boolean")


# --- slugs ------------------------------------------------------------------------------------------


def test_slug_from_the_name_unique(world):
    assert world.core.slug == "core"
    again = teams.team_create(name="Core", creator=world.users["admin"])
    odd = teams.team_create(name="  ¡¡ ", creator=world.users["admin"])
    assert again.slug == "core-2" and odd.slug == "team"


def test_team_request_by_slug_id_or_name(world):
    url = f"/api/sessions/{world.sessions['team'].public_id}/review-requests"
    for team in ("core", str(world.core.public_id), "Core"):
        assert post_json(world, "admin", url, {"team": team}).status_code == 201, team
    assert ReviewRequest.objects.filter(team=world.core).count() == 3
    assert post_json(world, "admin", url, {"team": "other"}).status_code == 400
    listed = world.client("viewer").get(f"/api/sessions/{world.sessions['team'].public_id}/reviews").json()
    assert {r["team"] for r in listed["requests"]} == {"core"}


def test_admin_edits_slug_on_team_page(world):
    url = f"/teams/{world.core.public_id}/slug/"
    page = world.client("admin").get(f"/teams/{world.core.public_id}/").content.decode()
    assert 'data-action="set-slug"' in page and 'value="core"' in page
    assert (
        'data-action="set-slug"' not in world.client("editor").get(f"/teams/{world.core.public_id}/").content.decode()
    )
    assert world.client("admin").post(url, {"slug": "core-review"}).status_code == 302
    world.core.refresh_from_db()
    assert world.core.slug == "core-review"
    assert AuditRecord.objects.filter(action="team.slug_set").count() == 1
    refused = world.client("admin", **{"HX-Request": "true"}).post(url, {"slug": "Not a slug!"})
    assert refused.status_code == 422 and "lowercase letters" in refused.content.decode()
    taken = world.client("admin").post(url, {"slug": world.other.slug})
    assert taken.status_code == 422 and "already has the slug" in taken.content.decode()
    assert world.client("editor").post(url, {"slug": "mine"}).status_code == 403
    assert world.client("other_admin").post(url, {"slug": "mine"}).status_code == 404
    world.core.refresh_from_db()
    assert world.core.slug == "core-review"


# --- score configs ----------------------------------------------------------------------------------


def test_admin_manages_scores_on_team_page(world):
    base = f"/teams/{world.core.public_id}/scores/"
    htmx = world.client("admin", **{"HX-Request": "true"})
    response = htmx.post(base, {"name": "quality", "kind": "numeric", "min_value": "1", "max_value": "5"})
    assert response.status_code == 200 and "quality" in response.content.decode()
    response = htmx.post(base, {"name": "kind", "kind": "categorical", "choices": "bug, style,bug"})
    assert response.status_code == 200
    assert ScoreConfig.objects.get(name="kind").choices == ["bug", "style"]
    bad = htmx.post(base, {"name": "empty", "kind": "categorical", "choices": " , "})
    assert bad.status_code == 422 and "needs its choices" in bad.content.decode()
    bad = htmx.post(base, {"name": "range", "kind": "numeric", "min_value": "5", "max_value": "1"})
    assert bad.status_code == 422 and "minimum must not be above" in bad.content.decode()
    assert htmx.post(base, {"name": "quality", "kind": "boolean"}).status_code == 422
    assert world.client("reviewer").post(base, {"name": "x", "kind": "boolean"}).status_code == 403
    assert world.client("other_admin").post(base, {"name": "x", "kind": "boolean"}).status_code == 404
    config = ScoreConfig.objects.get(name="quality")
    delete = f"{base}{config.pk}/delete/"
    assert world.client("editor").post(delete).status_code == 403
    assert htmx.post(delete).status_code == 200
    assert list(ScoreConfig.objects.values_list("name", flat=True)) == ["kind"]
    assert AuditRecord.objects.filter(action__in=["team.score_create", "team.score_delete"]).count() == 3


def test_verdict_scores_checked_against_team_configs(world):
    define(world)
    good = {"quality": 4.5, "kind": "bug", "safe": True}
    assert verdict(world, "reviewer", good).status_code == 201
    assert Verdict.objects.get().scores == good
    cases = [
        ({"speed": 1}, "score 'speed' is not one of this team's scores"),
        ({"quality": 6}, "score 'quality' is 6, above its maximum 5"),
        ({"quality": 0}, "score 'quality' is 0, below its minimum 1"),
        ({"quality": True}, "score 'quality' must be a number"),
        ({"quality": "4"}, "score 'quality' must be a number"),
        ({"quality": 10**400}, "score 'quality' must be a number"),  # no float holds it: never a 500
        ({"kind": "typo"}, "score 'kind' must be one of bug, style"),
        ({"safe": 1}, "score 'safe' must be true or false"),
    ]
    for scores, message in cases:
        response = verdict(world, "reviewer", scores)
        assert response.status_code == 400, scores
        body = response.json()
        assert message in body["message"] and body["extra"]["field"] == "scores", body
    assert Verdict.objects.count() == 1


def test_team_without_configs_takes_no_scores_personal_free_form(world):
    assert verdict(world, "reviewer", {"q": 1}).status_code == 400
    assert verdict(world, "reviewer", {}).status_code == 201
    assert verdict(world, "owner", {"anything": "goes", "n": 3}, key="personal").status_code == 201
    assert verdict(world, "owner", {"n": [1]}, key="personal").status_code == 400


def test_viewer_and_outsider_give_no_verdict(world):
    define(world)
    assert verdict(world, "viewer", {"safe": True}).status_code == 403
    assert verdict(world, "other_admin", {"safe": True}).status_code == 404
    assert not Verdict.objects.exists()
