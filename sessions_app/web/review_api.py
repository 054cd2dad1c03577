"""REST API for team review: comments, verdicts, review requests and the caller's queue.
Thin: parse, check the session permission, call store.reviews / store.review_queue."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router, Status

from sessions_app.access import teams
from sessions_app.store import review_queue, reviews, selectors
from sessions_app.web import exports
from sessions_app.web.schemas import CommentIn, CommentPatch, CreatedIdOut, ErrorOut, ReviewRequestIn, VerdictIn

router = Router(tags=["reviews"])
ERRORS: dict[int, Any] = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # both authenticators let only signed-in users through
    return request.user


@router.post("/sessions/{session_id}/comments", response={201: CreatedIdOut, **ERRORS}, url_name="comment_create")
def comment_create(request: HttpRequest, session_id: str, body: CommentIn) -> Status[dict[str, int]]:
    session = selectors.session_get_for_user(user=request.user, public_id=session_id, need="review")
    comment = reviews.comment_create(
        session=session, author=_user(request), entry_id=body.entryId, body=body.body, parent_id=body.parentId
    )
    return Status(201, {"id": comment.pk})


@router.get("/sessions/{session_id}/comments", url_name="comment_list")
def comment_list(request: HttpRequest, session_id: str) -> dict[str, Any]:
    session = selectors.session_get_for_user(user=request.user, public_id=session_id)
    return {"comments": reviews.comments_json(session=session)}


@router.patch("/comments/{comment_id}", response={200: dict[str, Any], **ERRORS}, url_name="comment_update")
def comment_update(request: HttpRequest, comment_id: int, body: CommentPatch) -> dict[str, Any]:
    comment, session = reviews.comment_get_for_user(user=request.user, comment_id=comment_id)
    reviews.comment_update(
        comment=comment, session=session, user=_user(request), body=body.body, resolved=body.resolved
    )
    root_resolved = comment.resolved if comment.parent is None else comment.parent.resolved
    return reviews.comment_out(comment, {comment.parent_id or comment.pk: root_resolved})


@router.delete("/comments/{comment_id}", response={204: None, **ERRORS}, url_name="comment_delete")
def comment_delete(request: HttpRequest, comment_id: int) -> Status[None]:
    comment, session = reviews.comment_get_for_user(user=request.user, comment_id=comment_id)
    reviews.comment_delete(comment=comment, session=session, user=_user(request))
    return Status(204, None)


@router.post("/sessions/{session_id}/reviews", response={201: CreatedIdOut, **ERRORS}, url_name="verdict_create")
def verdict_create(request: HttpRequest, session_id: str, body: VerdictIn) -> Status[dict[str, int]]:
    session = selectors.session_get_for_user(user=request.user, public_id=session_id, need="review")
    verdict = reviews.verdict_create(
        session=session,
        reviewer=_user(request),
        entry_id=body.entryId,
        verdict=body.verdict,
        body=body.body,
        scores=body.scores,
    )
    return Status(201, {"id": verdict.pk})


@router.get("/sessions/{session_id}/reviews", url_name="verdict_list")
def verdict_list(request: HttpRequest, session_id: str) -> dict[str, Any]:
    session = selectors.session_get_for_user(user=request.user, public_id=session_id)
    return {**reviews.verdicts_json(session=session), "requests": reviews.requests_json(session=session)}


@router.post(
    "/sessions/{session_id}/review-requests", response={201: CreatedIdOut, **ERRORS}, url_name="review_request_create"
)
def review_request_create(request: HttpRequest, session_id: str, body: ReviewRequestIn) -> Status[dict[str, int]]:
    session = selectors.session_get_for_user(user=request.user, public_id=session_id, need="review")
    row = reviews.request_create(
        session=session, requester=_user(request), reviewer=body.reviewer, team=body.team, entry_id=body.entryId
    )
    return Status(201, {"id": row.pk})


@router.get("/reviews", url_name="review_queue")
def queue(
    request: HttpRequest,
    section: review_queue.Section | None = None,
    session: str | None = None,
    offset: int = 0,
    limit: int = 20,
) -> dict[str, Any]:
    return review_queue.review_queue(user=_user(request), section=section, session=session, offset=offset, limit=limit)


@router.get("/teams/{team_id}/reviews", response={400: ErrorOut, 404: ErrorOut}, url_name="team_reviews")
def team_reviews(request: HttpRequest, team_id: str, format: str = "json") -> StreamingHttpResponse:
    """Every verdict and comment on the team's sessions, one row each, as CSV or JSON (streamed;
    store/review_export.py has the columns); for any member of the team, 404 for anyone else."""
    team = teams.team_get_for_user(user=_user(request), public_id=team_id)
    return exports.team_reviews_response(request, team, format)
