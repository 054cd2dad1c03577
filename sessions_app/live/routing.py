from __future__ import annotations

from typing import Any

from django.urls import path

from sessions_app.live.consumers import InboxConsumer, SessionConsumer
from sessions_app.live.workers import TurnWorker

# Browsers: one socket per open session page (htmx ws extension: ws-connect="/ws/sessions/<id>/").
websocket_urlpatterns: list[Any] = [
    path("ws/sessions/<str:public_id>/", SessionConsumer.as_asgi()),
    # Every signed-in page: the header's inbox badge (and the /reviews/ counts), live.
    path("ws/inbox/", InboxConsumer.as_asgi()),
]

# Channels workers (manage.py runworker piweb-turns): assistant turns when the layer is Redis.
channel_routes: dict[str, Any] = {"piweb-turns": TurnWorker.as_asgi()}
