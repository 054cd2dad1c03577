"""Review pages: the queue (/reviews/: what waits for the signed-in user, by section, with counts,
a section and session filter, and paging), a team's reviews as CSV or JSON, the inline threads'
forms and the verdict form on the session page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, QueryDict
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from sessions_app.access import permissions, team_scores, teams
from sessions_app.errors import InvalidRequest
from sessions_app.models import ReviewComment, ScoreConfig, Session
from sessions_app.store import review_mail, review_queue, reviews, selectors
from sessions_app.web import exports

PAGE_SIZE = 20
TITLES = {
    "requested": "Requested from me",
    "threads": "My open threads",
    "flagged": "Flagged in my teams",
    "approved": "Recently approved",
}


def _page_number(raw: str | None) -> int:
    return int(raw) if raw and raw.isdigit() and 0 < int(raw) < 100_000 else 1


@require_GET
@login_required
def review_queue_page(request: HttpRequest) -> HttpResponse:
    assert isinstance(request.user, User)
    raw_section = request.GET.get("section", "")
    section = next((name for name in review_queue.SECTIONS if name == raw_section), None)
    session = request.GET.get("session", "").strip()[:200] or None
    page = _page_number(request.GET.get("page"))
    queue = review_queue.review_queue(
        user=request.user, section=section, session=session, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
    )
    sections = [
        {"name": name, "title": TITLES[name], "count": queue["counts"][name], "items": queue.get(name)}
        for name in review_queue.SECTIONS
    ]
    total = queue["counts"][section] if section else 0
    base = {k: v for k, v in (("section", section), ("session", session)) if v}
    context = {
        "sections": sections,
        "section": section,
        "session": session or "",
        "page": page,
        "previous": urlencode({**base, "page": page - 1}) if section and page > 1 else "",
        "next": urlencode({**base, "page": page + 1}) if section and page * PAGE_SIZE < total else "",
        "emails": review_mail.enabled(),
        "emails_off": review_mail.opted_out(request.user),
        "teams": [team for team, _ in teams.team_list_for_user(user=request.user)],
    }
    return render(request, "reviews/queue.html", context)


@require_POST
@login_required
def review_email_choice(request: HttpRequest) -> HttpResponse:
    """The signed-in user's own choice: review emails (requests, mentions) on or off."""
    assert isinstance(request.user, User)
    review_mail.opt_out_set(user=request.user, off=request.POST.get("emails") != "on")
    return redirect("reviews")


@require_GET
@login_required
def team_reviews_download(request: HttpRequest, public_id: str, fmt: str) -> HttpResponseBase:
    """/teams/<id>/reviews.csv and .json: every verdict and comment on the team's sessions, for
    any member of the team (viewers read them on the session page too); others get a 404."""
    assert isinstance(request.user, User)
    team = teams.team_get_for_user(user=request.user, public_id=public_id)
    return exports.team_reviews_response(request, team, fmt)


# --- inline threads on the session page ------------------------------------------------------------


def _threads_fragment(request: HttpRequest, session: Session, entry_id: str, anchor: int) -> HttpResponse:
    """The entry's threads (htmx swaps them in place), or back to the page at the comment."""
    if request.headers.get("HX-Request") != "true":
        return redirect(reverse("sessions:detail", args=[session.public_id]) + f"?target={entry_id}#comment-{anchor}")
    threads = reviews.threads_by_entry(session=session, entry_ids=[entry_id]).get(entry_id, [])
    can = dict.fromkeys(permissions.session_capabilities(request.user, session), True)
    context = {"session": session, "entry_id": entry_id, "threads": threads, "can": can}
    return render(request, "sessions_app/partials/threads.html", context)


def _int(raw: str | None, field: str) -> int | None:
    if not raw:
        return None
    if not raw.isdigit():
        raise InvalidRequest(f"field '{field}' must be a comment id", field=field)
    return int(raw)


@require_POST
@login_required
def comment_post(request: HttpRequest, public_id: str) -> HttpResponse:
    """A new thread on an entry, or a reply (parent)."""
    session = selectors.session_get_for_user(user=request.user, public_id=public_id, need="review")
    assert isinstance(request.user, User)
    entry_id = request.POST.get("entry", "")
    comment = reviews.comment_create(
        session=session,
        author=request.user,
        entry_id=entry_id,
        body=request.POST.get("body", ""),
        parent_id=_int(request.POST.get("parent"), "parent"),
    )
    return _threads_fragment(request, session, comment.entry_id, comment.pk)


@require_POST
@login_required
def comment_resolve(request: HttpRequest, public_id: str) -> HttpResponse:
    session = selectors.session_get_for_user(user=request.user, public_id=public_id)
    assert isinstance(request.user, User)
    comment_id = _int(request.POST.get("comment"), "comment")
    comment = ReviewComment.objects.filter(session=session, pk=comment_id).first() if comment_id else None
    if comment is None:
        raise reviews.CommentNotFound()
    resolved = request.POST.get("resolved") == "1"
    reviews.comment_update(comment=comment, session=session, user=request.user, resolved=resolved)
    return _threads_fragment(request, session, comment.entry_id, comment.pk)


# --- the verdict form on the session page ----------------------------------------------------------


def panel_context(session: Session, *, anchor: str | None, open_form: bool = False) -> dict[str, Any]:
    """What verdicts.html shows: each reviewer's latest verdict, the team's score inputs, and the
    entry a verdict given here is anchored at (the selected one, else the leaf read)."""
    return {
        "latest": reviews.latest_verdicts(session=session),
        "configs": team_scores.score_configs(team_id=session.team_id),
        "anchor": anchor,
        "open": open_form,
    }


def _form_scores(data: QueryDict, configs: list[ScoreConfig]) -> dict[str, Any]:
    """The score inputs given (blank ones left out), typed for the check in team_scores: a numeric
    input that is no number is passed on as text, so the check says which score is wrong."""
    out: dict[str, Any] = {}
    for config in configs:
        raw = data.get(f"score:{config.name}", "").strip()
        if not raw:
            continue
        if config.kind == "boolean":
            out[config.name] = {"true": True, "false": False}.get(raw, raw)
        elif config.kind == "numeric":
            try:
                number = float(raw)
                out[config.name] = int(number) if number.is_integer() and "." not in raw else number
            except ValueError:
                out[config.name] = raw
        else:
            out[config.name] = raw
    return out


@require_POST
@login_required
def verdict_post(request: HttpRequest, public_id: str) -> HttpResponse:
    """A verdict from the session page's form (reviewers and above); the panel comes back redrawn,
    with the entry's tree marks for app.js to place (as a live redraw's are)."""
    session = selectors.session_get_for_user(user=request.user, public_id=public_id, need="review")
    assert isinstance(request.user, User)
    configs = team_scores.score_configs(team_id=session.team_id)
    row = reviews.verdict_create(
        session=session,
        reviewer=request.user,
        entry_id=request.POST.get("entry", ""),
        verdict=request.POST.get("verdict", ""),
        body=request.POST.get("body", ""),
        scores=_form_scores(request.POST, configs) or None,
    )
    if request.headers.get("HX-Request") != "true":
        url = reverse("sessions:detail", args=[session.public_id])
        return redirect(f"{url}?target={quote(row.entry_id, safe='')}#review-panel")
    can = dict.fromkeys(permissions.session_capabilities(request.user, session), True)
    context = {"session": session, "can": can, "review": panel_context(session, anchor=row.entry_id)}
    marks = reviews.tree_marks(session=session, entry_ids=[row.entry_id]).get(row.entry_id)
    live = {"session": session, "entry_id": row.entry_id, "marks": marks}
    return HttpResponse(
        render(request, "sessions_app/partials/verdicts.html", context).content
        + render(request, "sessions_app/partials/review_live_marks.html", live).content
    )
