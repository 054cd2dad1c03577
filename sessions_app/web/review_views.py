"""The review queue page (/reviews/): what waits for the signed-in user, by section, with counts,
a section and session filter, and paging. Reads only (store.review_queue)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.store import review_queue

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
    }
    return render(request, "reviews/queue.html", context)
