from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
# Django must be set up before anything imports models (consumers do).
django_asgi_app = get_asgi_application()

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
