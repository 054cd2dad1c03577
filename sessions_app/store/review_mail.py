"""Review email through Django's email backend: a review request to the reviewers it asks (the user,
or the team's reviewers and above), an @mention to the members it names. Sent after commit, never
to the actor, to inactive users, users without an address or users who opted out
(ReviewEmailOptOut); off with settings.PIWEB_REVIEW_EMAILS (default: on when email is configured).
A mail that fails is logged: the review action has happened whatever the mail server says."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.urls import reverse

from sessions_app.access import permissions
from sessions_app.models import ReviewComment, ReviewEmailOptOut, ReviewRequest, Session

log = logging.getLogger(__name__)
EXCERPT = 1000  # characters of a comment quoted in a mention mail


def enabled() -> bool:
    return bool(settings.PIWEB_REVIEW_EMAILS)


def opted_out(user: User) -> bool:
    return ReviewEmailOptOut.objects.filter(user=user).exists()


@transaction.atomic
def opt_out_set(*, user: User, off: bool) -> None:
    """The user's own choice: no review emails (off) or the default."""
    if off:
        ReviewEmailOptOut.objects.get_or_create(user=user)
    else:
        ReviewEmailOptOut.objects.filter(user=user).delete()


def _link(session: Session, suffix: str = "") -> str:
    return settings.PIWEB_SITE_URL + reverse("sessions:detail", args=[session.public_id]) + suffix


def _recipients(users: Iterable[User], actor: User) -> list[str]:
    chosen = [u for u in users if u.pk != actor.pk and u.is_active and u.email]
    if not chosen:
        return []
    out = set(ReviewEmailOptOut.objects.filter(user__in=chosen).values_list("user_id", flat=True))
    return sorted({u.email for u in chosen if u.pk not in out})


def _title(session: Session) -> str:
    """The session's name for a subject line: one line (a header may hold no line break), 80 characters."""
    return " ".join(str(session).split())[:80]


def _send_after_commit(subject: str, body: str, addresses: list[str]) -> None:
    def send() -> None:
        try:
            messages = [EmailMessage(subject, body, None, [to]) for to in addresses]
            get_connection().send_messages(messages)
        except Exception:
            log.exception("review mail %r to %d recipients failed", subject, len(addresses))

    if addresses:
        transaction.on_commit(send)


def request_made(*, request: ReviewRequest, session: Session, requester: User) -> None:
    if not enabled():
        return
    if request.reviewer is not None:
        users: list[User] = [request.reviewer]
    elif request.team_id is None:
        return
    else:
        rows = permissions.members_who_can("review").filter(team_id=request.team_id).select_related("user")
        users = [m.user for m in rows]
    where = f"?leaf={quote(request.entry_id, safe='')}" if request.entry_id else ""
    whom = "you" if request.reviewer is not None else f"the team {session.team}"
    subject = f"[piweb] {requester.get_username()} asked {whom} to review “{_title(session)}”"
    body = (
        f"{requester.get_username()} asked {whom} to review a session"
        f"{' (the branch up to one entry)' if request.entry_id else ''}:\n\n  {_link(session, where)}\n\n"
        f"Your open requests: {settings.PIWEB_SITE_URL}{reverse('reviews')}\n"
    )
    _send_after_commit(subject, body, _recipients(users, requester))


def mentioned(*, comment: ReviewComment, session: Session, author: User, names: Iterable[str]) -> None:
    if not enabled():
        return
    wanted = set(names)
    if not wanted:
        return
    users = list(User.objects.filter(username__in=wanted))
    subject = f"[piweb] {author.get_username()} mentioned you on “{_title(session)}”"
    excerpt = comment.body if len(comment.body) <= EXCERPT else comment.body[:EXCERPT] + "…"
    body = f"{author.get_username()} wrote:\n\n{excerpt}\n\n  {_link(session, f'#comment-{comment.pk}')}\n"
    _send_after_commit(subject, body, _recipients(users, author))
