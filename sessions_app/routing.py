from __future__ import annotations

from typing import Any

# Websocket routes arrive with live updates (issue: live chat); none are served yet.
websocket_urlpatterns: list[Any] = []
