from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app import selectors


@require_GET
@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    sessions = selectors.session_list_for_user(user=request.user)[:200]
    return render(request, "sessions_app/session_list.html", {"sessions": sessions})
