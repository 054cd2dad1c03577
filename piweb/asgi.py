from __future__ import annotations

import os

import django
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")


class _Handler(ASGIHandler):
    # A response body goes to the server in pieces of this size, each one send and one wake-up of
    # the event loop: Django's 64 KiB made a large context (megabytes of JSON) ~130 of them.
    chunk_size = 2**20


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
