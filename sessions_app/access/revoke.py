"""Taking access away from live connections.

Access is checked on every request, so a removed member or a deactivated user is refused from
their next one. What stays open is websockets: each SessionConsumer joins a group per user
(user_group) as well as its session's group; an "access.recheck" event on either makes it check
access again (AccessRecheck, mixed into the consumer) and close if it is gone. Deactivation also
deletes the user's Django sessions so that every browser is signed out at once.

Share links go for good: when a creator loses the right to share a session (demoted, removed,
deactivated, or the session moved to a team where they may not share), their live links on it are
marked revoked in the database (share_links_revoke_lost), so restoring the role does not bring a
link back. share_resolve still checks the right on every view as well.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session as DjangoSession
from django.db import transaction
from django.utils import timezone

from sessions_app import events, fanout
from sessions_app.access import audit, permissions
from sessions_app.models import Session, ShareLink

log = logging.getLogger(__name__)


class AccessRecheckEvent(TypedDict):
    type: str  # "access.recheck"


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def recheck_send(group: str) -> None:
    """Tell the sockets in a channel-layer group (user_group) to check their access again. Public so
    that tests can watch what is sent; a failure is logged, never raised (the write has committed)."""
    layer = get_channel_layer()
    if layer is None:
        return
    event: AccessRecheckEvent = {"type": "access.recheck"}
    try:
        async_to_sync(layer.group_send)(group, dict(event))
    except Exception:  # the write has committed; a lost notice only leaves a read-only socket open
        log.exception("publishing permissions.recheck to %s failed", group)


def user_revoked_publish(*, user_id: int, team_id: int | None = None) -> None:
    """After commit: the user's open websockets recheck access (team_id only documents why)."""
    transaction.on_commit(lambda: recheck_send(user_group(user_id)))


def session_access_changed_publish(*, session: Session) -> None:
    """After commit: everyone watching the session rechecks access (it moved to another team)."""
    group = events.group_name(session.pk)
    event: AccessRecheckEvent = {"type": "access.recheck"}
    transaction.on_commit(lambda: fanout.publish_sync(group, dict(event)))


def django_sessions_delete(*, user: User) -> int:
    """Sign the user out everywhere (database session backend): returns how many were deleted."""
    doomed = []
    for row in DjangoSession.objects.all().iterator(chunk_size=500):
        if str(row.get_decoded().get("_auth_user_id")) == str(user.pk):
            doomed.append(row.pk)
    DjangoSession.objects.filter(pk__in=doomed).delete()
    return len(doomed)


def share_links_revoke_lost(
    *, user: User | None = None, team_id: int | None = None, session: Session | None = None
) -> int:
    """Revoke, in the database, the live share links whose creator may no longer share their
    session, among those made by user, on team_id's sessions, or on session (at least one given).
    Call it after the change that took the right away, in its transaction. Returns how many."""
    assert user is not None or team_id is not None or session is not None
    links = ShareLink.objects.filter(revoked_at__isnull=True).select_related("session", "created_by")
    if user is not None:
        links = links.filter(created_by=user)
    if team_id is not None:
        links = links.filter(session__team_id=team_id)
    if session is not None:
        links = links.filter(session=session)
    now, lost = timezone.now(), []
    for link in links.select_for_update(of=("self",)).order_by("pk"):
        if not permissions.can(permissions.session_access(link.created_by, link.session), "share"):
            lost.append(link)
    for link in lost:
        reason = {"reason": "creator lost the right to share", "creator": link.created_by.username}
        link_revoke(link, actor=None, at=now, extra=reason)
    return len(lost)


def link_revoke(link: ShareLink, *, actor: User | None, at: Any = None, extra: dict[str, Any] | None = None) -> bool:
    """Revoke a share link for good, audited; False if it was revoked already (nothing is written)."""
    at = at or timezone.now()
    if not ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=at):
        return False
    link.revoked_at = at
    audit.audit_record(action="share.revoke", actor=actor, obj_type="share_link", obj_id=link.prefix,
                       session=link.session.public_id, extra=extra)  # fmt: skip
    return True


@transaction.atomic
def user_deactivate(*, user: User, actor: User | None = None) -> None:
    """Deactivate a user: no sign-in, no tokens (auth checks is_active), no Django sessions, and
    their open websockets close."""
    User.objects.filter(pk=user.pk).update(is_active=False)
    user.is_active = False
    django_sessions_delete(user=user)
    audit.audit_record(action="user.deactivate", actor=actor, obj_type="user", obj_id=user.username)
    share_links_revoke_lost(user=user)
    user_revoked_publish(user_id=user.pk)


class AccessRecheck:
    """Consumer mixin: on "access.recheck", close the socket if its user lost access."""

    scope: dict[str, Any]
    public_id: str
    close: Callable[..., Awaitable[None]]  # the consumer's (annotation only: must not shadow it)

    async def access_recheck(self, event: AccessRecheckEvent) -> None:
        user = self.scope.get("user")
        if user is None or not await database_sync_to_async(_still_allowed)(user.pk, self.public_id):
            await self.close()


def _still_allowed(user_id: int, public_id: str) -> bool:
    user = User.objects.filter(pk=user_id).first()
    session = Session.objects.filter(public_id=public_id).first()
    if user is None or session is None:
        return False
    return permissions.session_access(user, session) is not None
