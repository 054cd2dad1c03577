"""Who may do what with a session: the permission model, in one place.

A session is personal (team is None: only its owner sees it, and may do everything) or belongs to
a team, where each member's Membership role gives a set of capabilities. Every permission-checked
fetch goes through session_get_for_user: no access at all is SessionNotFound (a 404 that tells
nothing apart from a missing session); read access without the capability asked for is
SessionForbidden (403).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import OuterRef, QuerySet, Subquery

from sessions_app.errors import SessionForbidden, SessionNotFound, TeamNotFound
from sessions_app.models import BIG_COLUMNS, Membership, Session

Capability = Literal[
    "read", "label", "share", "review", "chat", "branch", "resolve", "import", "fork", "delete", "manage"
]


class Role(StrEnum):
    VIEWER = "viewer"
    REVIEWER = "reviewer"
    EDITOR = "editor"
    ADMIN = "admin"
    OWNER = "owner"  # of a personal session


_VIEWER: frozenset[Capability] = frozenset({"read"})
# review: comment, give verdicts, ask for reviews. resolve: resolve or reopen anyone's thread.
_REVIEWER: frozenset[Capability] = _VIEWER | {"label", "share", "review"}
_EDITOR: frozenset[Capability] = _REVIEWER | {"chat", "branch", "resolve", "import", "fork"}
_ADMIN: frozenset[Capability] = _EDITOR | {"delete", "manage"}

CAPABILITIES: dict[Role, frozenset[Capability]] = {
    Role.VIEWER: _VIEWER,
    Role.REVIEWER: _REVIEWER,
    Role.EDITOR: _EDITOR,
    Role.ADMIN: _ADMIN,
    Role.OWNER: _ADMIN,
}


def can(role: Role | None, need: Capability) -> bool:
    return role is not None and need in CAPABILITIES[role]


def members_who_can(need: Capability) -> QuerySet[Membership]:
    """The team memberships whose role has `need` (e.g. who reviews for a team asked to review)."""
    return Membership.objects.filter(role__in=[str(r) for r in Role if need in CAPABILITIES[r]])


def team_role(user: User | AnonymousUser, team_id: int) -> Role | None:
    """The user's role in the team, or None for a non-member (or anyone signed out or inactive)."""
    if not user.is_authenticated:
        return None
    if not user.is_active:
        return None
    role = Membership.objects.filter(team_id=team_id, user_id=user.pk).values_list("role", flat=True).first()
    if role is None:
        return None
    return Role(role)


_ROLE_FOR = "_member_role_for"  # (user pk, team id) the member_role annotation was computed for


def _with_member_role(sessions: QuerySet[Session], user_id: int) -> QuerySet[Session]:
    """Each session with the user's role in its team (member_role), in the same query: one round
    trip instead of two on the hot path."""
    role = Membership.objects.filter(team_id=OuterRef("team_id"), user_id=user_id).values("role")[:1]
    return sessions.annotate(member_role=Subquery(role))


def _member_role(user: User | AnonymousUser, session: Session) -> Role | None:
    if getattr(session, _ROLE_FOR, None) == (user.pk, session.team_id):
        role = getattr(session, "member_role", None)
        return Role(role) if role else None
    assert session.team_id is not None
    return team_role(user, session.team_id)


def session_access(user: User | AnonymousUser, session: Session) -> Role | None:
    """The role through which user reaches session, or None if they may not see it at all."""
    if not user.is_authenticated:
        return None
    if not user.is_active:
        return None
    if session.deleting or session.staging:  # (models.VISIBLE, for one session)
        return None
    if session.team_id is not None:
        return _member_role(user, session)
    if session.owner_id != user.pk:
        return None
    return Role.OWNER


def session_capabilities(user: User | AnonymousUser, session: Session) -> frozenset[Capability]:
    """Everything the user may do with the session (empty if they cannot see it). On a session
    from session_get_for_user this costs no query: its member_role came with it."""
    role = session_access(user, session)
    return CAPABILITIES[role] if role is not None else frozenset()


def session_get_for_user(*, user: User | AnonymousUser, public_id: str, need: Capability = "read") -> Session:
    """The session if user may `need` it. SessionNotFound if it is missing or they cannot see it;
    SessionForbidden if they can see it but not do that."""
    if not user.is_authenticated:
        raise SessionNotFound()
    session = _with_member_role(Session.objects.filter(public_id=public_id).defer(*BIG_COLUMNS), user.pk).first()
    if session is None:
        raise SessionNotFound()
    setattr(session, _ROLE_FOR, (user.pk, session.team_id))  # member_role is this user's, in this team
    role = session_access(user, session)
    if role is None:
        raise SessionNotFound()
    if not can(role, need):
        raise SessionForbidden(need=need, role=str(role))
    return session


def team_require(*, user: User | AnonymousUser, team_id: int, need: Capability) -> Role:
    """For actions on a team rather than a session (import into it, manage members): its members
    without the capability get SessionForbidden, everyone else TeamNotFound."""
    role = team_role(user, team_id)
    if role is None:
        raise TeamNotFound()
    if not can(role, need):
        raise SessionForbidden(need=need, role=str(role))
    return role
