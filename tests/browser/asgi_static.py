"""piweb's ASGI application plus static files, for the daphne that browser chat tests start
(Django serves /static/ only under runserver; Channels' live-server test case wraps it the same way)."""

from __future__ import annotations

from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from piweb.asgi import application as piweb_application
from piweb.asgi import django_asgi_app

static_http = ASGIStaticFilesHandler(django_asgi_app)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await static_http(scope, receive, send)
    else:
        await piweb_application(scope, receive, send)
