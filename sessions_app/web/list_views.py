"""The htmx UI's session list, new chat and import (with its background progress).

Thin, as views.py: access through the selectors and teams, writes through the services and the
import pipeline.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseStopPolling

from sessions_app.access import permissions, teams
from sessions_app.errors import ImportNotFound, InvalidRequest, SearchInvalid
from sessions_app.models import Session
from sessions_app.store import explorer, services
from sessions_app.store.importing import background
from sessions_app.web import forms, header
from sessions_app.web.views import HtmxHttpRequest, page_url, request_user


@require_GET
@vary_on_headers("HX-Request")
@login_required
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    form = forms.ListQueryForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    query = {k: data.get(k) or "" for k in ("q", "label", "sort")}
    search_error = ""
    try:
        sessions = explorer.session_list(
            user=request.user, search=query["q"], label=query["label"], sort=query["sort"] or "modified"
        )
    except SearchInvalid as exc:  # (a search stopped at its time budget, say: said above the empty table)
        sessions, search_error = Session.objects.none(), exc.message
    page = explorer.paginate(sessions, data.get("page"))
    labels = explorer.labels_by_session(list(page.object_list))
    context = {
        "page": page,
        "rows": [(s, labels.get(s.pk, []), header.when_shown(s)) for s in page.object_list],
        "query": query,
        "qs": urlencode({k: v for k, v in query.items() if v}),
        "form": form,
        "all_labels": explorer.all_labels(user=request.user),
        "search_error": search_error,
        "chat_teams": [
            t for t, role in teams.team_list_for_user(user=request_user(request)) if permissions.can(role, "import")
        ],
    }
    if request.htmx and request.htmx.target == "session-table":  # (swapped in: htmx swaps no 4xx)
        return render(request, "sessions_app/session_list.html#session-table", context)
    return render(request, "sessions_app/session_list.html", context, status=422 if search_error else 200)


@require_POST
@login_required
def session_new(request: HtmxHttpRequest) -> HttpResponse:
    """The list's "New chat": an empty session (in a team the user may import into, if one is
    chosen), then its page with the composer focused."""
    form = forms.NewChatForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest("Choose a team or none.", errors=form.errors.get_json_data())
    user = request_user(request)
    team = form.cleaned_data["team"]
    with transaction.atomic():
        into = teams.team_for_import(user=user, public_id=team) if team else None
        session = services.session_create(owner=user)
        if into is not None:
            teams.session_move_to_team(session=session, team=into, actor=user)
    return redirect(page_url(session) + "#composer")


@require_POST
@login_required
def session_import(request: HtmxHttpRequest) -> HttpResponse:
    """Import one or more pi files; each file is accepted or rejected whole, errors with line numbers."""
    background.require_upload_size(request)  # (before the body is parsed)
    team = request.POST.get("team", "")
    into = teams.team_for_import(user=request_user(request), public_id=team) if team else None
    uploads = request.FILES.getlist("files")
    if uploads and request.POST.get("background") == "1":
        # The page's uploader: each file imports in the background; the answer polls its progress.
        jobs = [
            background.job_start(
                user=request_user(request), data=background.upload_source(u), name=u.name or "upload.jsonl", into=into
            )
            for u in uploads
        ]
        return render(request, "sessions_app/import_progress.html", {"jobs": jobs}, status=202)
    results: list[background.Result] = []
    for upload in uploads:
        name = upload.name or "upload.jsonl"
        source = background.upload_source(upload)
        try:
            results.append(background.import_one(user=request_user(request), data=source, name=name, into=into))
        finally:
            source.close()
    if not results:
        results.append({"name": "", "ok": False, "message": "Choose one or more .jsonl files.", "errors": []})
    failed = [r.get("status", 400) for r in results if not r["ok"]]
    status = max(failed) if failed else 200
    if request.htmx:
        return render(request, "sessions_app/session_list.html#import-results", {"results": results}, status=status)
    return render(request, "sessions_app/import_done.html", {"results": results}, status=status)


@require_GET
@login_required
def import_progress(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    """A background import's progress (polled every 300 ms), then its result. Only its user sees it."""
    job = background.job_get(user=request_user(request), job_id=job_id)
    if job is None and request.htmx:
        # Unknown (or lost in a restart): tell the poller to stop instead of failing every 300 ms.
        return HttpResponseStopPolling(
            '<p class="import-lost">This import is no longer tracked (the server may have restarted). '
            "Reload the list to see what was imported.</p>"
        )
    if job is None:
        raise ImportNotFound()
    return render(request, "sessions_app/import_progress.html", {"jobs": [job]})
