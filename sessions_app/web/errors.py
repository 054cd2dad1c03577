"""Domain errors (sessions_app/errors.py) to responses for every page, htmx fragment and chat
command: the one mapping for views. The REST API has its own (piweb/api.py).

A 404 is raised as Http404, so the 404 page is the same whatever was not found; any other status
keeps the error's own, with its message as plain text (htmx shows it in a toast: static/piweb/app.js).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import Http404, HttpRequest, HttpResponse

from sessions_app.errors import SessionsError


def error_response(exc: SessionsError) -> HttpResponse:
    if exc.status == 404:
        raise Http404(exc.message)
    return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")


class AppErrorMiddleware:
    """Turns a SessionsError that a view lets through into its response (error_response)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return error_response(exception) if isinstance(exception, SessionsError) else None
