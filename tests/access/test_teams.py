"""Team services and pages: roles, the last admin, invitations, moving sessions, team routes by role."""

from __future__ import annotations

import itertools

import pytest

from sessions_app.access import permissions, teams
from sessions_app.access.permissions import Role
from sessions_app.errors import MemberError, SessionConflict, SessionForbidden, SessionNotFound, TeamNotFound
from sessions_app.models import AuditRecord, Membership, ScoreConfig, Session, Team
from sessions_app.store import selectors
from tests.worlds import ROLES, World, build_session

pytestmark = pytest.mark.django_db


def role_of(world: World, name: str) -> str | None:
    return Membership.objects.filter(team=world.core, user=world.users[name]).values_list("role", flat=True).first()


def test_creator_is_admin_and_roles_give_capabilities(world):
    assert role_of(world, "admin") == "admin"
    s = world.sessions["team"]
    assert {name: permissions.session_access(world.users[name], s) for name in ROLES} == {r: Role(r) for r in ROLES}
    assert permissions.session_access(world.users["owner"], s) is None
    assert permissions.session_access(world.users["owner"], world.sessions["personal"]) == Role.OWNER
    assert permissions.session_access(world.users["admin"], world.sessions["personal"]) is None


def test_capability_table_is_cumulative():
    caps = [permissions.CAPABILITIES[Role(r)] for r in ROLES]
    assert all(a < b for a, b in itertools.pairwise(caps))
    assert caps[0] == {"read"}
    assert caps[1] - caps[0] == {"label", "share", "review"}
    assert caps[2] - caps[1] == {"chat", "branch", "resolve", "import", "fork"}
    assert caps[3] - caps[2] == {"delete", "manage"}


def test_who_reviews_for_a_team_is_its_members_whose_role_may_review(world):
    """One rule for the review queue, the inbox count and the review mail."""
    reviewers = permissions.members_who_can("review").filter(team=world.core)
    assert {m.user.username for m in reviewers} == {"reviewer", "editor", "admin"}


def test_session_get_for_user_404_then_403(world):
    sid = world.sessions["team"].public_id
    with pytest.raises(SessionNotFound):
        selectors.session_get_for_user(user=world.users["owner"], public_id=sid)
    with pytest.raises(SessionForbidden):
        selectors.session_get_for_user(user=world.users["viewer"], public_id=sid, need="label")
    assert selectors.session_get_for_user(user=world.users["viewer"], public_id=sid).pk == world.sessions["team"].pk
    with pytest.raises(SessionNotFound):
        selectors.session_get_for_user(user=world.users["viewer"], public_id="missing")


def test_inactive_members_have_no_access(world):
    viewer = world.users["viewer"]
    viewer.is_active = False
    viewer.save()
    assert permissions.session_access(viewer, world.sessions["team"]) is None


def test_list_has_personal_and_team_sessions_only(world):
    names = set(selectors.session_list_for_user(user=world.users["viewer"]).values_list("name", flat=True))
    assert names == {"team session"}
    _mine, _ = build_session(world.users["viewer"], "viewer's own")
    names = set(selectors.session_list_for_user(user=world.users["viewer"]).values_list("name", flat=True))
    assert names == {"team session", "viewer's own"}
    assert set(selectors.session_list_for_user(user=world.users["owner"]).values_list("name", flat=True)) == {
        "personal session"
    }


def test_invite_by_username(world):
    admin = world.users["admin"]
    with pytest.raises(MemberError):
        teams.member_invite(team=world.core, username="nobody", role="viewer", actor=admin)
    with pytest.raises(SessionConflict):
        teams.member_invite(team=world.core, username="viewer", role="editor", actor=admin)
    with pytest.raises(MemberError):
        teams.member_invite(team=world.core, username="owner", role="boss", actor=admin)
    teams.member_invite(team=world.core, username="owner", role="reviewer", actor=admin)
    assert permissions.session_access(world.users["owner"], world.sessions["team"]) == Role.REVIEWER
    assert AuditRecord.objects.filter(action="team.member_add").count() == 4  # 3 in the world + this one


@pytest.mark.parametrize("who", ["viewer", "reviewer", "editor"])
def test_only_admins_manage_members(world, who):
    actor = world.users[who]
    with pytest.raises(SessionForbidden):
        teams.member_invite(team=world.core, username="owner", role="viewer", actor=actor)
    with pytest.raises(SessionForbidden):
        teams.member_role_set(team=world.core, user=world.users["viewer"], role="admin", actor=actor)
    with pytest.raises(SessionForbidden):
        teams.member_remove(team=world.core, user=world.users["admin"], actor=actor)
    with pytest.raises(TeamNotFound):
        teams.member_invite(team=world.other, username="owner", role="viewer", actor=actor)
    assert role_of(world, "admin") == "admin"


def test_last_admin_cannot_be_demoted_or_removed(world):
    admin = world.users["admin"]
    with pytest.raises(SessionConflict):
        teams.member_role_set(team=world.core, user=admin, role="editor", actor=admin)
    with pytest.raises(SessionConflict):
        teams.member_remove(team=world.core, user=admin, actor=admin)
    teams.member_role_set(team=world.core, user=world.users["editor"], role="admin", actor=admin)
    teams.member_role_set(team=world.core, user=admin, role="viewer", actor=admin)  # now allowed
    assert role_of(world, "admin") == "viewer"
    with pytest.raises(SessionConflict):
        teams.member_role_set(team=world.core, user=world.users["editor"], role="viewer", actor=world.users["editor"])


def test_removed_member_loses_access_at_once(world):
    teams.member_remove(team=world.core, user=world.users["editor"], actor=world.users["admin"])
    client = world.client("editor")
    assert client.get(f"/sessions/{world.sessions['team'].public_id}/").status_code == 404
    assert client.get(f"/api/sessions/{world.sessions['team'].public_id}").status_code == 404


def test_a_member_may_leave(world):
    teams.member_remove(team=world.core, user=world.users["viewer"], actor=world.users["viewer"])
    assert role_of(world, "viewer") is None


def test_move_to_team_owner_or_admin(world):
    owner, admin = world.users["owner"], world.users["admin"]
    personal = world.sessions["personal"]
    with pytest.raises(TeamNotFound):  # the owner is not in Core
        teams.session_move_to_team(session=personal, team=world.core, actor=owner)
    teams.member_invite(team=world.core, username="owner", role="viewer", actor=admin)
    with pytest.raises(SessionForbidden):  # a viewer cannot bring sessions in
        teams.session_move_to_team(session=personal, team=world.core, actor=owner)
    teams.member_role_set(team=world.core, user=owner, role="editor", actor=admin)
    teams.session_move_to_team(session=personal, team=world.core, actor=owner)
    assert Session.objects.get(pk=personal.pk).team_id == world.core.pk
    assert permissions.session_access(owner, personal) == Role.EDITOR  # the team's role now, not owner
    with pytest.raises(SessionNotFound):  # someone else's personal session
        teams.session_move_to_team(session=world.sessions["other"], team=world.core, actor=admin)
    with pytest.raises(SessionForbidden):  # an editor cannot move a team session away
        teams.session_move_to_team(session=world.sessions["team"], team=world.core, actor=world.users["editor"])


# --- team pages by role --------------------------------------------------------------------------

TEAM_ROUTES = [
    # (name, method, path, data, need, ok)
    ("detail", "get", "/teams/{team}/", None, "read", 200),
    ("invite", "post", "/teams/{team}/members/", {"username": "owner", "role": "viewer"}, "manage", 302),
    ("role", "post", "/teams/{team}/members/{target}/role/", {"role": "reviewer"}, "manage", 302),
    ("remove", "post", "/teams/{team}/members/{victim}/remove/", {}, "manage", 302),
    ("move", "post", "/teams/{team}/sessions/", {"session": "{mine}"}, "import", 302),
    ("slug", "post", "/teams/{team}/slug/", {"slug": "renamed"}, "manage", 302),
    ("score_add", "post", "/teams/{team}/scores/", {"name": "q", "kind": "boolean"}, "manage", 302),
    ("score_delete", "post", "/teams/{team}/scores/{config}/delete/", {}, "manage", 302),
    ("reviews_csv", "get", "/teams/{team}/reviews.csv", None, "read", 200),  # every member: viewers read them
    ("reviews_json", "get", "/teams/{team}/reviews.json", None, "read", 200),
    ("usage", "get", "/teams/{team}/usage/", None, "read", 200),
]
TEAM_CASES = [(r, who, scope) for r in TEAM_ROUTES for who in ROLES for scope in ("core", "other")]


def team_state() -> list[tuple[object, ...]]:
    members = list(Membership.objects.order_by("pk").values_list("team_id", "user_id", "role"))
    return [
        *members,
        *Session.objects.order_by("pk").values_list("pk", "team_id"),
        *Team.objects.order_by("pk").values_list("pk", "slug"),
        *ScoreConfig.objects.order_by("pk").values_list("pk", "team_id", "name"),
    ]


@pytest.mark.parametrize(("route", "who", "scope"), TEAM_CASES, ids=[f"{r[0]}-{w}-{s}" for r, w, s in TEAM_CASES])
def test_team_routes(world, route, who, scope):
    _name, method, path, data, need, ok = route
    team = world.core if scope == "core" else world.other
    mine, _ = build_session(world.users[who], "mine")
    victim = "viewer" if who == "reviewer" else "reviewer"  # leaving the team oneself is allowed
    config = ScoreConfig.objects.create(team=team, name="seed", kind="boolean")
    values = {"team": team.public_id, "mine": mine.public_id, "victim": victim, "target": "viewer", "config": config.pk}
    data = {k: v.format(**values) for k, v in (data or {}).items()}
    before = team_state()
    response = getattr(world.client(who), method)(path.format(**values), data)
    if scope == "other":
        assert response.status_code == 404
    elif permissions.can(Role(who), need):
        assert response.status_code == ok
        return
    else:
        assert response.status_code == 403
    assert team_state() == before


@pytest.mark.parametrize("route", TEAM_ROUTES, ids=[r[0] for r in TEAM_ROUTES])
def test_team_routes_anonymous(world, route):
    _name, method, path, data, _need, _ok = route
    response = getattr(world.client(None), method)(
        path.format(team=world.core.public_id, mine="x", victim="viewer", target="viewer", config=1), data or {}
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_team_pages_htmx_role_change(world):
    client = world.client("admin", **{"HX-Request": "true"})
    response = client.post(f"/teams/{world.core.public_id}/members/viewer/role/", {"role": "editor"})
    assert response.status_code == 200
    assert 'id="members"' in response.content.decode()
    assert role_of(world, "viewer") == "editor"
    page = world.client("admin").get(f"/teams/{world.core.public_id}/").content.decode()
    assert 'data-role-select="viewer"' in page
    assert "team session" in page
    listing = world.client("viewer").get("/teams/").content.decode()
    assert "Core" in listing
    assert "Other" not in listing


def test_team_create_page(world):
    response = world.client("owner").post("/teams/new/", {"name": "Fresh"})
    assert response.status_code == 302
    team = teams.team_list_for_user(user=world.users["owner"])[0]
    assert (team[0].name, team[1]) == ("Fresh", Role.ADMIN)


def test_deactivate_command(world):
    from io import StringIO

    from django.contrib.sessions.models import Session as DjangoSession
    from django.core.management import call_command

    world.client("owner")
    assert DjangoSession.objects.count() == 1
    call_command("deactivate_user", "owner", stdout=StringIO())
    assert DjangoSession.objects.count() == 0
    world.users["owner"].refresh_from_db()
    assert not world.users["owner"].is_active
    assert AuditRecord.objects.filter(action="user.deactivate").count() == 1
