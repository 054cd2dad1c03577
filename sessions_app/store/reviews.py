"""Team review on the tree: comment threads on entries, verdicts on paths, review requests.

The one write path for review data. Comments and verdicts are about the tree, not part of it: they
are never entries, so they change no export and no context. Every write is audit-logged in its own
transaction (the audit chain is their tamper evidence; an edit keeps the old body there). Bodies
are rendered and sanitised once, when written, so a page shows stored HTML. The renderer is
render.markup's, handed over when the app starts (apps.py): the store layer comes before render.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from sessions_app import events
from sessions_app.access import audit, permissions, team_scores
from sessions_app.access.permissions import can, session_access
from sessions_app.errors import InvalidRequest, MemberError, NotFound, SessionConflict, SessionForbidden
from sessions_app.models import VERDICTS, Membership, ReviewComment, ReviewRequest, Session, Verdict
from sessions_app.store import review_mail, selectors

MAX_BODY = 20_000  # characters of one comment or verdict note
_MENTION = re.compile(r"(?<![\w@])@([\w.+-]{1,150})")


def _no_renderer(text: str) -> str:
    raise RuntimeError("reviews.use_renderer was not called (sessions_app.apps does it when Django starts)")


_render: Callable[[str], str] = _no_renderer


def use_renderer(render: Callable[[str], str]) -> None:
    """Markdown to sanitised HTML for comment and verdict bodies (render.markup.markdown)."""
    global _render
    _render = render


class CommentNotFound(NotFound):
    default_message = "Comment not found"


def _body(text: Any, *, field: str = "body", required: bool = True) -> str:
    if not isinstance(text, str):
        raise InvalidRequest(f"field '{field}' must be a string", field=field)
    if required and not text.strip():
        raise InvalidRequest(f"field '{field}' must not be empty", field=field)
    if len(text) > MAX_BODY:
        raise InvalidRequest(f"field '{field}' is longer than {MAX_BODY} characters", field=field, limit=MAX_BODY)
    return text


def _members(session: Session) -> set[str]:
    """Usernames that may be mentioned: the team's members, or the owner of a personal session."""
    if session.team_id is None:
        return {session.owner.get_username()}
    names = Membership.objects.filter(team_id=session.team_id).values_list("user__username", flat=True)
    return set(names)


def mentions(session: Session, text: str) -> list[str]:
    found = dict.fromkeys(m.rstrip(".") for m in _MENTION.findall(text))
    members = _members(session) if found else set()
    return [name for name in found if name in members]


def _tell_viewers(session: Session, entry_id: str, what: str) -> None:
    events.publish_on_commit(session, events.review_event(session, entry_id=entry_id, what=what))


def _comment_done(
    *, user: User, session: Session, action: str, comment_pk: int, entry_id: str, what: str, **changes: Any
) -> None:
    """What every change to a comment ends with: its audit record, then the viewers told."""
    audit.audit_record(
        actor=user, action=action, obj_type="comment", obj_id=str(comment_pk), session=session.public_id, **changes
    )
    _tell_viewers(session, entry_id, what)


def iso_utc(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --- comments ------------------------------------------------------------------------------------


def comment_create(
    *, session: Session, author: User, entry_id: str, body: Any, parent_id: int | None = None
) -> ReviewComment:
    """A new thread on entry_id, or (parent_id) a reply to a thread: the reply goes on the thread's
    root, whichever of its comments was answered, and on that thread's entry."""
    text = _body(body)
    selectors.entry_require(session=session, entry_id=entry_id)
    parent = None
    if parent_id is not None:
        parent = ReviewComment.objects.filter(session=session, pk=parent_id).first()
        if parent is None:
            raise CommentNotFound(f"comment {parent_id} is not a comment of this session", field="parentId")
        if parent.parent_id is not None:
            parent = parent.parent
        assert parent is not None
        if parent.entry_id != entry_id:
            raise InvalidRequest("a reply must be on its thread's entry", field="entryId", expected=parent.entry_id)
    with transaction.atomic():
        comment = ReviewComment.objects.create(
            session=session,
            entry_id=entry_id,
            parent=parent,
            author=author,
            author_username=author.get_username(),
            body=text,
            body_html=_render(text),
            mentions=mentions(session, text),
        )
        _comment_done(
            user=author,
            session=session,
            action="comment.create",
            comment_pk=comment.pk,
            entry_id=entry_id,
            what="reply" if parent else "comment",
            after={"entry_id": entry_id, "parent_id": parent.pk if parent else None, "body": text},
            extra={"mentions": comment.mentions} if comment.mentions else None,
        )
        review_mail.mentioned(comment=comment, session=session, author=author, names=comment.mentions)
    return comment


def comment_get_for_user(*, user: User | AnonymousUser, comment_id: int) -> tuple[ReviewComment, Session]:
    """The comment and its session if user may read the session; CommentNotFound otherwise."""
    comment = ReviewComment.objects.filter(pk=comment_id).only("session__public_id").select_related("session").first()
    if comment is None:
        raise CommentNotFound()
    try:
        session = selectors.session_get_for_user(user=user, public_id=comment.session.public_id)
    except NotFound:
        raise CommentNotFound() from None
    return ReviewComment.objects.get(pk=comment_id), session


def _may_resolve(user: User, session: Session, root: ReviewComment) -> bool:
    if root.author_id == user.pk or can(session_access(user, session), "resolve"):
        return True
    return ReviewRequest.objects.filter(session=session, requested_by=user).exists()


def comment_update(
    *, comment: ReviewComment, session: Session, user: User, body: Any = None, resolved: bool | None = None
) -> ReviewComment:
    """Edit the body (its author only, the old body kept in the audit log) and/or resolve or
    reopen the comment's thread (see _may_resolve)."""
    if comment.deleted_at is not None and body is not None:
        raise SessionConflict("a deleted comment cannot be edited", field="body")
    if body is not None and comment.author_id != user.pk:
        raise SessionForbidden("only its author may edit a comment", need="author")
    if body is not None and not can(session_access(user, session), "review"):
        raise SessionForbidden(need="review")  # an author who lost the reviewer role
    root = comment.parent or comment
    if resolved is not None:
        if not can(session_access(user, session), "review") and root.author_id != user.pk:
            raise SessionForbidden(need="review")
        if not _may_resolve(user, session, root):
            raise SessionForbidden("only the thread's author, editors, admins or the requester may resolve it")
    text = _body(body) if body is not None else None
    with transaction.atomic():
        if text is not None and text != comment.body:
            before, mentioned_before = comment.body, set(comment.mentions)
            comment.body, comment.body_html = text, _render(text)
            comment.mentions = mentions(session, text)
            new_names = [n for n in comment.mentions if n not in mentioned_before]  # mailed once
            review_mail.mentioned(comment=comment, session=session, author=user, names=new_names)
            comment.edited_at = timezone.now()
            comment.save(update_fields=["body", "body_html", "mentions", "edited_at"])
            _comment_done(
                user=user, session=session, action="comment.edit", comment_pk=comment.pk, entry_id=comment.entry_id,
                what="edit", before={"body": before}, after={"body": text},
            )  # fmt: skip
        if resolved is not None and resolved != root.resolved:
            root.resolved = resolved
            root.save(update_fields=["resolved"])
            if root.pk == comment.pk:
                comment.resolved = resolved
            what = "resolve" if resolved else "reopen"
            _comment_done(
                user=user, session=session, action=f"comment.{what}", comment_pk=root.pk, entry_id=root.entry_id,
                what=what,
            )  # fmt: skip
    return comment


def comment_delete(*, comment: ReviewComment, session: Session, user: User) -> None:
    """Soft delete by its author: the row stays as a tombstone (no body), replies stay."""
    if comment.author_id != user.pk:
        raise SessionForbidden("only its author may delete a comment", need="author")
    if not can(session_access(user, session), "review"):
        raise SessionForbidden(need="review")  # an author who lost the reviewer role
    if comment.deleted_at is not None:
        return
    with transaction.atomic():
        before = comment.body
        comment.body, comment.body_html, comment.mentions = "", "", []
        comment.deleted_at = timezone.now()
        comment.save(update_fields=["body", "body_html", "mentions", "deleted_at"])
        _comment_done(
            user=user, session=session, action="comment.delete", comment_pk=comment.pk, entry_id=comment.entry_id,
            what="delete", before={"body": before},
        )  # fmt: skip


def comments_of(*, session: Session) -> list[ReviewComment]:
    """The session's comments in thread order (roots and replies by id)."""
    return list(ReviewComment.objects.filter(session=session).order_by("id"))


def threads_by_entry(*, session: Session, entry_ids: list[str]) -> dict[str, list[list[ReviewComment]]]:
    """The threads on these entries, for the page: entry id -> threads, each its root and then
    its replies (one indexed query; bodies come rendered)."""
    rows = (
        ReviewComment.objects.filter(session=session, entry_id__in=entry_ids).defer("body", "mentions").order_by("id")
        if entry_ids
        else []
    )
    threads: dict[int, list[ReviewComment]] = {}
    out: dict[str, list[list[ReviewComment]]] = {}
    for c in rows:
        if c.parent_id is None:
            threads[c.pk] = [c]
            out.setdefault(c.entry_id, []).append(threads[c.pk])
        elif c.parent_id in threads:
            threads[c.parent_id].append(c)
    return out


def tree_marks(
    *, session: Session, entry_ids: list[str] | None = None, within: set[str] | None = None
) -> dict[str, dict[str, Any]]:
    """For the tree's rows: entry id -> {"comments": how many live comments, "verdicts": each
    reviewer's latest verdict kind on that entry}. Two grouped queries, whatever the tree's size;
    entry_ids: only those entries' (a live redraw of one row); within: only entries within a
    branch share's scope."""
    marks: dict[str, dict[str, Any]] = {}
    live = ReviewComment.objects.filter(session=session, deleted_at__isnull=True)
    verdicts = Verdict.objects.filter(session=session)
    if entry_ids is not None:
        live, verdicts = live.filter(entry_id__in=entry_ids), verdicts.filter(entry_id__in=entry_ids)
    for entry_id, n in live.values("entry_id").annotate(n=Count("id")).values_list("entry_id", "n"):
        if within is None or entry_id in within:
            marks.setdefault(entry_id, {"comments": 0, "verdicts": []})["comments"] = n
    latest: dict[tuple[str, str], str] = {}
    for entry_id, who, kind in verdicts.order_by("id").values_list("entry_id", "reviewer_username", "verdict"):
        latest[(entry_id, who)] = kind
    for (entry_id, _), kind in sorted(latest.items()):
        if within is not None and entry_id not in within:
            continue
        marks.setdefault(entry_id, {"comments": 0, "verdicts": []})["verdicts"].append(kind)
    return marks


def commented_entries(*, session: Session) -> set[str]:
    """Entries with at least one live comment (the tree's "Commented" filter): those the tree's 💬
    count marks (tree_marks). A thread whose comments were all deleted has nothing left to read."""
    rows = ReviewComment.objects.filter(session=session, deleted_at__isnull=True).values_list("entry_id", flat=True)
    return set(rows.distinct())


def comment_out(comment: ReviewComment, resolved_of: dict[int, bool]) -> dict[str, Any]:
    root = comment.parent_id or comment.pk
    return {
        "id": comment.pk,
        "entryId": comment.entry_id,
        "parentId": comment.parent_id,
        "author": comment.author_username,
        "body": None if comment.deleted_at else comment.body,
        "created": iso_utc(comment.created_at),
        "resolved": resolved_of.get(root, False),
        "edited": comment.edited_at is not None,
        "deleted": comment.deleted_at is not None,
    }


def comments_json(*, session: Session) -> list[dict[str, Any]]:
    rows = comments_of(session=session)
    resolved_of = {c.pk: c.resolved for c in rows if c.parent_id is None}
    return [comment_out(c, resolved_of) for c in rows]


def comment_batches(*, session: Session, batch: int = 500) -> Iterator[list[tuple[ReviewComment, bool]]]:
    """Every comment of the session in id order (threads' roots before their replies), a batch at a
    time by keyset, each with its thread's resolved flag: for exports, in bounded memory."""
    resolved_of: dict[int, bool] = {}
    after = 0
    while True:
        rows = list(ReviewComment.objects.filter(session=session, pk__gt=after).order_by("id")[:batch])
        if not rows:
            return
        for c in rows:
            if c.parent_id is None:
                resolved_of[c.pk] = c.resolved
        yield [(c, resolved_of.get(c.parent_id or c.pk, False)) for c in rows]
        after = rows[-1].pk


def verdict_batches(*, session: Session, batch: int = 500) -> Iterator[list[Verdict]]:
    """Every verdict of the session in id order, a batch at a time by keyset."""
    after = 0
    while rows := list(Verdict.objects.filter(session=session, pk__gt=after).order_by("id")[:batch]):
        yield rows
        after = rows[-1].pk


# --- verdicts --------------------------------------------------------------------------------------


def verdict_create(
    *, session: Session, reviewer: User, entry_id: str, verdict: str, body: Any = "", scores: Any = None
) -> Verdict:
    """The reviewer's verdict on the path from the root to entry_id; it completes their open
    review requests on the session (and the team's, if they are a member of it)."""
    if verdict not in VERDICTS:
        raise InvalidRequest(f"field 'verdict' must be one of {', '.join(VERDICTS)}", field="verdict")
    note = _body(body if body is not None else "", required=False)
    parsed = team_scores.scores_check(team_id=session.team_id, value=scores)
    selectors.entry_require(session=session, entry_id=entry_id)
    with transaction.atomic():
        row = Verdict.objects.create(
            session=session,
            entry_id=entry_id,
            reviewer=reviewer,
            reviewer_username=reviewer.get_username(),
            verdict=verdict,
            body=note,
            body_html=_render(note) if note else "",
            scores=parsed,
        )
        audit.audit_record(
            actor=reviewer,
            action="verdict.create",
            obj_type="verdict",
            obj_id=str(row.pk),
            session=session.public_id,
            after={"entry_id": entry_id, "verdict": verdict, "body": note, "scores": parsed},
        )
        open_requests = ReviewRequest.objects.filter(session=session, done_at__isnull=True)
        mine = open_requests.filter(reviewer=reviewer)
        if session.team_id is not None:
            mine = mine | open_requests.filter(team_id=session.team_id)
        events.inbox_changed_on_commit(_inbox_users(mine))
        mine.update(done_at=timezone.now(), verdict=row)
        _tell_viewers(session, entry_id, "verdict")
    return row


def verdict_out(v: Verdict) -> dict[str, Any]:
    return {
        "id": v.pk,
        "entryId": v.entry_id,
        "reviewer": v.reviewer_username,
        "verdict": v.verdict,
        "body": v.body or None,
        "scores": v.scores,
        "created": iso_utc(v.created_at),
    }


def _latest(rows: list[Verdict]) -> list[Verdict]:
    latest: dict[str, Verdict] = {}
    for v in rows:
        latest[v.reviewer_username] = v
    return list(latest.values())


def latest_verdicts(*, session: Session) -> list[Verdict]:
    """Each reviewer's latest verdict on the session (the one shown), in the order given."""
    return _latest(list(Verdict.objects.filter(session=session).order_by("id")))


def verdicts_json(*, session: Session) -> dict[str, Any]:
    """Every verdict in order, and each reviewer's latest (the one shown)."""
    rows = list(Verdict.objects.filter(session=session).order_by("id"))
    return {"reviews": [verdict_out(v) for v in rows], "latest": [verdict_out(v) for v in _latest(rows)]}


# --- review requests -----------------------------------------------------------------------------


def request_create(
    *,
    session: Session,
    requester: User,
    reviewer: str | None = None,
    team: str | None = None,
    entry_id: str | None = None,
) -> ReviewRequest:
    """Ask a member of the session's team, or the whole team, to review it (or the branch up to
    entry_id). Only for team sessions; grants nothing."""
    if session.team_id is None:
        raise SessionConflict("review requests are only for team sessions; move the session to a team first")
    if (reviewer is None) == (team is None):
        raise InvalidRequest("give exactly one of 'reviewer' (a username) or 'team'", field="reviewer")
    if entry_id is not None:
        selectors.entry_require(session=session, entry_id=entry_id)
    target_user = None
    if reviewer is not None:
        member = Membership.objects.filter(team_id=session.team_id, user__username=reviewer).select_related("user")
        found = member.first()
        if found is None:
            raise MemberError(f"'{reviewer}' is not a member of this session's team", field="reviewer")
        target_user = found.user
    else:
        assert session.team is not None
        if team not in (session.team.slug, str(session.team.public_id), session.team.name):
            raise InvalidRequest("a team request goes to the session's own team", field="team")
    with transaction.atomic():
        row = ReviewRequest.objects.create(
            session=session,
            entry_id=entry_id,
            requested_by=requester,
            reviewer=target_user,
            team_id=None if target_user else session.team_id,
        )
        audit.audit_record(
            actor=requester,
            action="review_request.create",
            obj_type="review_request",
            obj_id=str(row.pk),
            session=session.public_id,
            after={"reviewer": reviewer, "team": team, "entry_id": entry_id},
        )
        events.inbox_changed_on_commit(_inbox_users([row]))
        review_mail.request_made(request=row, session=session, requester=requester)
    return row


def _inbox_users(rows: Iterable[ReviewRequest]) -> set[int]:
    """Whose "requested from me" count these requests are in: the reviewer asked, or the members of
    the team asked who review (review_queue counts a team request for them)."""
    users: set[int] = set()
    teams: set[int] = set()
    for r in rows:
        if r.reviewer_id is not None:
            users.add(r.reviewer_id)
        elif r.team_id is not None:
            teams.add(r.team_id)
    if teams:
        reviewers = permissions.members_who_can("review").filter(team_id__in=teams)
        users |= set(reviewers.values_list("user_id", flat=True))
    return users


def request_out(r: ReviewRequest) -> dict[str, Any]:
    return {
        "id": r.pk,
        "session": r.session.public_id,
        "sessionName": str(r.session),
        "entryId": r.entry_id,
        "reviewer": r.reviewer.get_username() if r.reviewer else None,
        "team": r.team.slug if r.team else None,
        "requestedBy": r.requested_by.get_username() if r.requested_by else None,
        "created": iso_utc(r.created_at),
        "done": r.done_at is not None,
    }


def requests_json(*, session: Session) -> list[dict[str, Any]]:
    rows = ReviewRequest.objects.filter(session=session).select_related("session", "reviewer", "team", "requested_by")
    return [request_out(r) for r in rows]
