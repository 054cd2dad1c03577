"""Team services: create a team, add/remove members, change roles, move sessions into a team.

Writes for teams live here (services.py holds the session/entry writes). Callers pass the acting
user; each service checks the acting user's capability itself (permissions.team_require), so the API,
views and commands cannot forget to. Removing a member closes their open websockets on the team's
sessions (revoke.user_revoked_publish). Whoever loses the right to share a session this way loses
their share links on it for good (revoke.share_links_revoke_lost).
"""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from sessions_app.access import audit, permissions, revoke
from sessions_app.access.permissions import Role
from sessions_app.errors import MemberError, SessionConflict, SessionForbidden, SessionNotFound, TeamNotFound
from sessions_app.models import TEAM_ROLES, Membership, Session, Team


def team_get_for_user(*, user: User, public_id: str) -> Team:
    try:
        team = Team.objects.filter(public_id=public_id).first()
    except ValidationError:  # not a UUID
        raise TeamNotFound() from None
    if team is None:
        raise TeamNotFound()
    if permissions.team_role(user, team.pk) is None:
        raise TeamNotFound()
    return team


def team_for_import(*, user: User, public_id: str) -> Team:
    """The team to import into: TeamNotFound unless a member, SessionForbidden below editor."""
    team = team_get_for_user(user=user, public_id=public_id)
    permissions.team_require(user=user, team_id=team.pk, need="import")
    return team


def team_slug(name: str) -> str:
    """A free slug from a team name: slugified, then -2, -3... if another team has it."""
    base = (slugify(name) or "team")[:90]
    taken = set(Team.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    return slug


_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@transaction.atomic
def team_slug_set(*, team: Team, slug: str, actor: User) -> Team:
    """An admin renames the team's slug: lowercase letters, digits and single hyphens, unique."""
    permissions.team_require(user=actor, team_id=team.pk, need="manage")
    slug = slug.strip().lower()
    if not (0 < len(slug) <= 100 and _SLUG.fullmatch(slug)):
        raise MemberError("A slug is lowercase letters, digits and single hyphens (at most 100)", field="slug")
    if slug == team.slug:
        return team
    if Team.objects.filter(slug=slug).exclude(pk=team.pk).exists():
        raise SessionConflict(f"Another team already has the slug {slug!r}", field="slug")
    before, team.slug = team.slug, slug
    team.save(update_fields=["slug"])
    audit.audit_record(
        action="team.slug_set", actor=actor, obj_type="team", obj_id=str(team.public_id),
        before={"slug": before}, after={"slug": slug},
    )  # fmt: skip
    return team


def team_list_for_user(*, user: User) -> list[tuple[Team, Role]]:
    rows = Membership.objects.filter(user_id=user.pk).select_related("team").order_by("team__name", "team_id")
    return [(m.team, Role(m.role)) for m in rows]


@transaction.atomic
def team_create(*, name: str, creator: User) -> Team:
    """A new team; its creator is its first admin."""
    name = name.strip()
    if not name:
        raise MemberError("A team needs a name", field="name")
    team = Team.objects.create(name=name[:100], slug=team_slug(name[:100]))
    Membership.objects.create(team=team, user=creator, role=Role.ADMIN)
    audit.audit_record(
        action="team.create", actor=creator, obj_type="team", obj_id=str(team.public_id), after={"name": team.name}
    )
    return team


def _role(role: str) -> str:
    if role not in TEAM_ROLES:
        raise MemberError(f"Unknown role {role!r}", field="role", roles=list(TEAM_ROLES))
    return role


@transaction.atomic
def member_invite(*, team: Team, username: str, role: str, actor: User) -> Membership:
    """An admin adds an existing user (by username) with a role."""
    permissions.team_require(user=actor, team_id=team.pk, need="manage")
    _role(role)
    user = User.objects.filter(username=username.strip(), is_active=True).first()
    if user is None:
        raise MemberError(f"No user {username!r}", field="username")
    membership, created = Membership.objects.get_or_create(team=team, user=user, defaults={"role": role})
    if not created:
        raise SessionConflict(f"{user.username} is already a member", field="username")
    after = {"user": user.username, "role": role}
    audit.audit_record(action="team.member_add", actor=actor, obj_type="team", obj_id=str(team.public_id), after=after)
    return membership


def _admins_left(team: Team, *, without: int) -> int:
    """Admins of the team other than user id `without`; locks the rows so two demotions cannot race."""
    rows = Membership.objects.select_for_update().filter(team=team, role=Role.ADMIN).exclude(user_id=without)
    return len(list(rows.values_list("pk", flat=True)))


@transaction.atomic
def member_role_set(*, team: Team, user: User, role: str, actor: User) -> Membership:
    """An admin changes a member's role; the last admin cannot be demoted."""
    permissions.team_require(user=actor, team_id=team.pk, need="manage")
    _role(role)
    membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        raise MemberError(f"{user.username} is not a member", field="username")
    if membership.role == Role.ADMIN and role != Role.ADMIN and _admins_left(team, without=user.pk) == 0:
        raise SessionConflict("A team needs at least one admin", field="role")
    previous = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit.audit_record(
        action="team.role_set",
        actor=actor,
        obj_type="team",
        obj_id=str(team.public_id),
        before={"user": user.username, "role": previous},
        after={"user": user.username, "role": role},
    )
    revoke.share_links_revoke_lost(user=user, team_id=team.pk)
    return membership


@transaction.atomic
def member_remove(*, team: Team, user: User, actor: User) -> None:
    """An admin removes a member (a member may also leave); the last admin cannot go. Their open
    websockets on the team's sessions are closed once this commits."""
    if actor.pk != user.pk:
        permissions.team_require(user=actor, team_id=team.pk, need="manage")
    membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        raise MemberError(f"{user.username} is not a member", field="username")
    if membership.role == Role.ADMIN and _admins_left(team, without=user.pk) == 0:
        raise SessionConflict("A team needs at least one admin", field="username")
    membership.delete()
    before = {"user": user.username, "role": membership.role}
    audit.audit_record(
        action="team.member_remove", actor=actor, obj_type="team", obj_id=str(team.public_id), before=before
    )
    revoke.share_links_revoke_lost(user=user, team_id=team.pk)
    revoke.user_revoked_publish(user_id=user.pk, team_id=team.pk)


@transaction.atomic
def session_move_to_team(*, session: Session, team: Team, actor: User) -> Session:
    """Give a personal session to a team: by its owner (who must be in the team and may import
    there) or, for a session already in a team, by an admin of both teams."""
    role = permissions.session_access(actor, session)
    if role is None:
        raise SessionNotFound()
    if not permissions.can(role, "manage"):
        raise SessionForbidden(need="manage", role=str(role))
    permissions.team_require(user=actor, team_id=team.pk, need="import")
    previous = session.team
    session.team = team
    session.save(update_fields=["team", "updated_at"])
    before, after = {"team": str(previous.public_id) if previous else None}, {"team": str(team.public_id)}
    audit.audit_record(
        action="session.team_set", actor=actor, obj_type="session", obj_id=session.public_id, before=before, after=after
    )
    revoke.share_links_revoke_lost(session=session)
    if role != Role.OWNER:
        revoke.session_access_changed_publish(session=session)
    return session
