"""The /search/ page: hits across every session the user may read, grouped by session."""

from __future__ import annotations

from itertools import groupby
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from sessions_app.errors import SearchInvalid
from sessions_app.store import search

PAGE = 30


def hit_url(session_id: str, entry_id: str) -> str:
    """The session page on the hit's branch, the hit selected."""
    return reverse("sessions:detail", args=[session_id]) + "?" + urlencode({"leaf": entry_id, "target": entry_id})


@require_GET
@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "")
    cursor = request.GET.get("cursor") or None
    error = ""
    groups: list[tuple[tuple[str, str], list[tuple[search.Hit, str]]]] = []
    result = None
    status = 200
    if q.strip():
        try:
            result = search.search_audited(user=request.user, q=q, limit=PAGE, cursor=cursor, via="page")
        except SearchInvalid as exc:
            error, status = exc.message, 422
    if result is not None:
        for key, hits in groupby(result.hits, key=lambda h: (h.session_id, h.session_name)):
            groups.append((key, [(h, hit_url(h.session_id, h.entry_id)) for h in hits]))
    more = urlencode({"q": q, "cursor": result.next}) if result is not None and result.next else ""
    context = {"q": q, "groups": groups, "result": result, "error": error, "more": more}
    return render(request, "sessions_app/search.html", context, status=status)
