"""The review queue (/reviews/ and GET /api/reviews): what waits for a user, in sections, each
counted and paged. Only sessions the user can read appear (selectors.session_list_for_user)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils import timezone

from sessions_app.access import permissions
from sessions_app.models import ReviewComment, ReviewRequest, Verdict
from sessions_app.store import reviews, selectors

Section = Literal["requested", "threads", "flagged", "approved"]
SECTIONS: tuple[Section, ...] = ("requested", "threads", "flagged", "approved")
RECENT = timedelta(days=30)  # how far back "recently approved" looks
MAX_LIMIT = 100


def _review_teams(user: User) -> list[int]:
    return list(permissions.members_who_can("review").filter(user=user).values_list("team_id", flat=True))


def _requested(user: User, visible: QuerySet[Any]) -> QuerySet[ReviewRequest]:
    mine = Q(reviewer=user) | Q(team_id__in=_review_teams(user))
    rows = ReviewRequest.objects.filter(mine, done_at__isnull=True, session__in=visible)
    return rows.select_related("session", "reviewer", "team", "requested_by").order_by("-id")


def _threads(user: User, visible: QuerySet[Any]) -> QuerySet[ReviewComment]:
    rows = ReviewComment.objects.filter(
        author=user, parent__isnull=True, resolved=False, deleted_at__isnull=True, session__in=visible
    )
    return rows.select_related("session").order_by("-id")


def _verdicts(verdict: str, visible: QuerySet[Any], *, since: Any = None) -> QuerySet[Verdict]:
    rows = Verdict.objects.filter(verdict=verdict, session__in=visible.filter(team__isnull=False))
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows.select_related("session").order_by("-id")


def _thread_out(c: ReviewComment) -> dict[str, Any]:
    return {
        "id": c.pk,
        "session": c.session.public_id,
        "sessionName": str(c.session),
        "entryId": c.entry_id,
        "body": c.body,
        "created": reviews.iso_utc(c.created_at),
    }


def _verdict_out(v: Verdict) -> dict[str, Any]:
    return {**reviews.verdict_out(v), "session": v.session.public_id, "sessionName": str(v.session)}


def _sets(user: User, session: str | None) -> dict[Section, tuple[QuerySet[Any], Any]]:
    visible = selectors.session_list_for_user(user=user).values("pk")
    if session:
        visible = visible.filter(public_id=session)
    return {
        "requested": (_requested(user, visible), reviews.request_out),
        "threads": (_threads(user, visible), _thread_out),
        "flagged": (_verdicts("flagged", visible), _verdict_out),
        "approved": (_verdicts("approved", visible, since=timezone.now() - RECENT), _verdict_out),
    }


def queue_counts(*, user: User, session: str | None = None) -> dict[str, int]:
    """How many items each section holds (the queue page's counts, redrawn live)."""
    return {name: rows.count() for name, (rows, _) in _sets(user, session).items()}


def inbox_count(*, user: User) -> int:
    """The header's inbox badge: open review requests for the user ("requested from me")."""
    return _sets(user, None)["requested"][0].count()


def review_queue(
    *, user: User, section: Section | None = None, session: str | None = None, offset: int = 0, limit: int = 20
) -> dict[str, Any]:
    """Counts of every section; the items of one section (or of each, when none is given) from
    offset, at most limit. session: only that session's items (by public id)."""
    limit = max(1, min(limit, MAX_LIMIT))
    offset = max(0, offset)
    sets = _sets(user, session)
    out: dict[str, Any] = {"counts": {name: rows.count() for name, (rows, _) in sets.items()}}
    for name, (rows, shape) in sets.items():
        if section is None or section == name:
            out[name] = [shape(row) for row in rows[offset : offset + limit]]
    out["offset"], out["limit"] = offset, limit
    return out
