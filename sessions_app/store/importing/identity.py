"""Which stored session a pi file is, for its importer: one id model for import, sync and pull.

A session keeps pi's session id (the header's `id`) as its server id (public_id) when that id is
free. If another account already holds it, the file becomes a new session for the importer under a
new server id, with pi's id kept as its source id (Session.source_id; header_raw keeps the header
byte for byte, so the export is still pi's file). Re-importing finds the importer's session by
pi's id among the sessions they own or may write (their own first), so it appends only the new
lines; a session they may only read is someone else's for this rule.

Nothing here tells the importer that someone else's session exists: a stranger's session is never
returned, never locked and never named; the importer sees the same 201 "created" as for a free id.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User
from django.db.models import Case, IntegerField, Q, Value, When

from sessions_app.access import permissions
from sessions_app.models import Session


def stored_copy(*, owner: User, source_id: str) -> Session | None:
    """The importer's stored session for pi's session source_id, locked for the import, or None.

    Their own session comes first, then one a team lets them write. A session of their own that is
    being deleted is returned too (the import refuses it as such), and so is one of theirs still
    staging; any other session does not exist for them."""
    found = _reachable(owner, source_id)
    if found is None and Session.objects.filter(public_id=source_id).exists():
        # pi's id is taken by someone else: a new id follows. Two imports of this file by the same
        # user queue here (PostgreSQL; SQLite's import transaction is IMMEDIATE), so the second
        # finds the first's session instead of making a second one.
        User.objects.select_for_update().filter(pk=owner.pk).values_list("pk", flat=True).first()
        found = _reachable(owner, source_id)
    if found is None:
        return None
    return Session.objects.select_for_update(no_key=True).get(pk=found.pk)


def sync_copy(*, user: User, source_id: str) -> Session | None:
    """The user's visible session for pi's session source_id, as a push finds it (their own
    first, then one a team lets them write), or None: nobody else's session exists for them."""
    found = _reachable(user, source_id)
    if found is None or found.deleting or found.staging:
        return None
    return found


def _reachable(owner: User, source_id: str) -> Session | None:
    mine = Case(When(owner_id=owner.pk, then=Value(0)), default=Value(1), output_field=IntegerField())
    candidates = (
        Session.objects.filter(Q(public_id=source_id) | Q(source_id=source_id))
        .annotate(mine_first=mine)
        .order_by("mine_first", "pk")
    )
    for session in candidates:
        if session.owner_id == owner.pk and (session.deleting or session.staging):
            return session  # (the import refuses the one, waits for the other: pipeline._open_stage)
        if permissions.can(permissions.session_access(owner, session), "import"):
            return session  # theirs, or a team's they may write (a reader gets a copy of their own)
    return None


def server_id(*, owner: User, source_id: str) -> str | None:
    """The server id for a new session of pi's id source_id: that id if free, a new UUID if a
    session the importer cannot reach holds it; None if one they reach does (another import of
    theirs stored it meanwhile: the caller looks again, and finds it)."""
    if not Session.objects.filter(public_id=source_id).exists():
        return source_id
    if _reachable(owner, source_id) is not None:
        return None
    return str(uuid.uuid4())
