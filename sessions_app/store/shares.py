"""Share links: read-only links to a whole session or to one branch of it.

A branch share names an entry; what it shows is the path from the root to that entry and every
entry below it, nothing else (share_scope). Only a SHA-256 of each link's token is stored, so a
link is shown once, when it is made. A link works while it is not revoked, not expired, and its
creator still may share the session. Losing that right (leaving the team, losing the role) revokes
their links in the database (access.revoke.share_links_revoke_lost): a restored role does not
bring them back.
Each view of a shared page is recorded in the audit log.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from sessions_app.access import audit, permissions, revoke
from sessions_app.core.listing import Listing, update_listing
from sessions_app.errors import EntryNotFound, InvalidRequest, SessionNotFound, ShareNotFound
from sessions_app.models import Session, ShareLink
from sessions_app.store import explorer, selectors

TOKEN_PREFIX = "pis_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def share_create(
    *,
    session: Session,
    user: User,
    entry_id: str | None = None,
    expires_days: int | None = None,
    include_comments: bool = False,
) -> tuple[ShareLink, str]:
    """A link to the session (entry_id None) or to the branch at entry_id, showing its review
    comments and verdicts only if include_comments (share_shows_reviews). The caller got session
    with need="share"; the plain token is returned once."""
    if not permissions.can(permissions.session_access(user, session), "share"):
        raise SessionNotFound()
    if entry_id:
        selectors.entry_require(session=session, entry_id=entry_id)
    if expires_days is not None and expires_days < 1:
        raise InvalidRequest("expires_days must be at least 1", field="expires_days")
    token = TOKEN_PREFIX + secrets.token_urlsafe(24)
    expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
    share = ShareLink.objects.create(
        session=session,
        entry_id=entry_id or None,
        created_by=user,
        prefix=token[:12],
        key_hash=_digest(token),
        expires_at=expires_at,
        include_comments=include_comments,
    )
    audit.audit_record(
        action="share.create",
        actor=user,
        obj_type="share_link",
        obj_id=share.prefix,
        session=session.public_id,
        after={
            "entry": entry_id or None,
            "expires_at": expires_at.isoformat() if expires_at else None,
            "include_comments": include_comments,
        },
    )
    return share, token


def share_list_for_user(*, user: User) -> QuerySet[ShareLink]:
    """The links the user made, and those on sessions they administer."""
    mine = Q(created_by=user)
    managed = Q(session__team__memberships__user=user, session__team__memberships__role=permissions.Role.ADMIN)
    owned = Q(session__owner=user, session__team__isnull=True)
    return (
        ShareLink.objects.filter(mine | managed | owned)
        .filter(session__deleting=False, session__staging__isnull=True)  # (models.VISIBLE)
        .select_related("session", "created_by")
        .distinct()
        .order_by("-created_at", "-pk")
    )


@transaction.atomic
def share_revoke(*, user: User, share_id: int) -> ShareLink:
    """Its creator, or whoever may manage the session, revokes a link; twice is a no-op."""
    share = ShareLink.objects.select_related("session").filter(pk=share_id).first()
    if share is None:
        raise ShareNotFound()
    if share.created_by_id != user.pk and not permissions.can(
        permissions.session_access(user, share.session), "manage"
    ):
        raise ShareNotFound()
    if share.revoked_at is None:
        revoke.link_revoke(share, actor=user)
    return share


def share_resolve(token: str) -> ShareLink:
    """The live link for a token, or ShareNotFound (unknown, revoked, expired, creator lost access)."""
    share = ShareLink.objects.select_related("session", "created_by").filter(key_hash=_digest(token)).first()
    if share is None:
        raise ShareNotFound()
    if share.revoked_at is not None:
        raise ShareNotFound()
    if share.expires_at is not None and share.expires_at <= timezone.now():
        raise ShareNotFound()
    if share.session.deleting or share.session.staging:
        raise ShareNotFound()
    if not permissions.can(permissions.session_access(share.created_by, share.session), "share"):
        raise ShareNotFound()
    return share


def share_viewed(*, share: ShareLink) -> None:
    ShareLink.objects.filter(pk=share.pk).update(views=F("views") + 1, last_viewed_at=timezone.now())
    audit.audit_record(
        action="share.view",
        actor=None,
        obj_type="share_link",
        obj_id=share.prefix,
        session=share.session.public_id,
        extra={"entry": share.entry_id},
    )


_DESCENDANTS = """
WITH RECURSIVE down(entry_id) AS (
    SELECT entry_id FROM sessions_app_entry WHERE session_id = %s AND entry_id = %s
    UNION ALL
    SELECT e.entry_id FROM sessions_app_entry e JOIN down ON e.session_id = %s AND e.parent_id = down.entry_id
)
SELECT entry_id FROM down
"""


def share_scope(share: ShareLink) -> set[str] | None:
    """Entry ids the link may show: None for the whole session; for a branch, the path to its
    entry and everything below it."""
    if share.entry_id is None:
        return None
    session = share.session
    ids = {n.id for n in selectors.path_nodes(session=session, leaf_id=share.entry_id)}
    with connection.cursor() as cursor:
        cursor.execute(_DESCENDANTS, [session.pk, share.entry_id, session.pk])
        ids.update(row[0] for row in cursor.fetchall())
    return ids


def share_shows_reviews(share: ShareLink | None) -> bool:
    """Whether a page shows review threads and verdicts: always for a signed-in reader (share None),
    for a link only if its creator chose so; what it shows is then limited to the link's scope
    (reviews.threads_by_entry and tree_marks with within), so a branch link shows nothing anchored
    off its branch."""
    return share is None or share.include_comments


def shared_place(
    share: ShareLink, scope: set[str] | None, *, leaf_id: str | None, target_id: str | None
) -> explorer.Place:
    """Where a share page looks, as explorer.resolve_place, inside the scope: an entry asked for
    outside it is ShareNotFound. Without a leaf: the session's leaf if in scope, else the newest leaf
    below the target or, when that leaves the scope (a target above the shared entry), below the
    shared entry (explorer.newest_leaf, whose subtree is all in scope)."""
    session = share.session
    for asked in (leaf_id, target_id):
        if asked is not None and scope is not None and asked not in scope:
            raise ShareNotFound("Entry not found")
    if leaf_id is None and target_id is not None:
        leaf_id = explorer.newest_leaf(session, target_id)
        if scope is not None and leaf_id not in scope:
            leaf_id = _branch_leaf(share)  # it passes through the target, an ancestor of the entry
    if leaf_id is None and scope is not None and session.leaf_id not in scope:
        leaf_id = _branch_leaf(share)
    try:
        return explorer.resolve_place(session, leaf_id=leaf_id, target_id=target_id)
    except EntryNotFound:
        raise ShareNotFound("Entry not found") from None


def _branch_leaf(share: ShareLink) -> str:
    assert share.entry_id is not None  # a scope is a branch's
    return explorer.newest_leaf(share.session, share.entry_id)


def shared_title(share: ShareLink) -> str:
    """The name a share page shows, by pi's listing rule (listing.update_listing: the latest
    session_info's name, else the first user message). A branch link reads its shared path only
    (root to the shared entry): nothing from another branch, another root or below the entry."""
    session = share.session
    if share.entry_id is None:
        return session.name or session.first_message
    listed = Listing()
    for node in selectors.path_nodes(session=session, leaf_id=share.entry_id):
        if node.type == "session_info" or node.role == "user":
            update_listing(listed, node.data)
    return listed.name or listed.first_message
