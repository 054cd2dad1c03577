from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from sessions_app.access.api_tokens import BearerToken, SignedInCookie
from sessions_app.errors import BodyTooLarge, ImportRejected, SessionsError

api = NinjaAPI(title="piweb", version="1.0.0", auth=[BearerToken(), SignedInCookie()], urls_namespace="api")
api.add_router("/sessions", "sessions_app.web.api.router")
api.add_router("/sync", "sessions_app.web.sync_api.router")
api.add_router("", "sessions_app.web.review_api.router")  # /sessions/{id}/comments, /comments, /reviews
api.add_router("/search", "sessions_app.web.search_api.router")


@api.exception_handler(SessionsError)
def sessions_error(request: HttpRequest, exc: SessionsError) -> HttpResponse:
    """ErrorOut; a rejected import's problems go in "errors" (ImportErrorOut), each listed once."""
    body = exc.as_dict()
    if isinstance(exc, ImportRejected):
        extra = dict(exc.extra)
        body["errors"] = extra.pop("errors", [])
        body["extra"] = extra
    return api.create_response(request, body, status=exc.status)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    """No live bearer token and no signed-in session: 401 with the API's error body."""
    body = {"message": "Authentication required", "extra": {}}
    response = api.create_response(request, body, status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(RequestDataTooBig)
def body_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    """A JSON body over DATA_UPLOAD_MAX_MEMORY_SIZE: 413 with the API's error body, not Django's bare 400."""
    return sessions_error(request, BodyTooLarge.over(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
