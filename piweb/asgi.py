from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TypeVar

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest
from django.http.response import HttpResponseBase

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

_T = TypeVar("_T")


class _Handler(ASGIHandler):
    # A file response is read in blocks of this size (Django's 64 KiB: many more reads and sends).
    chunk_size = 2**20

    @classmethod
    def chunk_bytes(cls, data: Sequence[_T]) -> Iterator[tuple[Sequence[_T], bool]]:
        # A body already in memory goes to the server whole: one send and one wake-up of the event
        # loop, and no slice copied out of it (the transport buffers it as one piece either way).
        # A large context is megabytes of JSON.
        yield data, True

    # The middleware chain runs as under WSGI: the whole of it in the request's thread, one hop
    # from the event loop and back. Django's async chain hops once per hook of each middleware
    # built on MiddlewareMixin (sessions, CSRF, auth, ...), about 17 per request (bench_requests).
    # Async views (the chat commands) run on the event loop, called from that thread.
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await sync_to_async(self.get_response, thread_sensitive=True)(request)
        return response


# Django must be set up before anything imports models (consumers do); as get_asgi_application.
django.setup(set_prefix=False)
django_asgi_app = _Handler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from piweb import uploads  # noqa: E402
from sessions_app.live.routing import channel_routes, websocket_urlpatterns  # noqa: E402

uploads.install()  # daphne: no second, slow parse of multipart uploads (see uploads.py)

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # Channels workers (manage.py runworker piweb-turns) run assistant turns when the layer is Redis.
        "channel": ChannelNameRouter(channel_routes),
    }
)
