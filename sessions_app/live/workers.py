"""The Channels worker that runs assistant turns when the channel layer is shared (Redis).

``manage.py runworker piweb-turns`` (or ``manage.py turn_worker``, which first recovers turns
whose process died). Each ``turn.run`` message starts the turn as a task, so one worker runs many
turns at once; a turn already claimed elsewhere is skipped (the claim is an atomic UPDATE).
"""

from __future__ import annotations

from typing import Any

from channels.consumer import AsyncConsumer

from sessions_app.live import streaming


class TurnWorker(AsyncConsumer):  # type: ignore[misc]
    async def turn_run(self, message: dict[str, Any]) -> None:
        streaming.ensure_janitor()
        streaming.start_local(int(message["turn"]))
