"""A Channels worker for assistant turns: recover turns of dead processes, then runworker piweb-turns."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from sessions_app import events
from sessions_app.live import streaming


class Command(BaseCommand):
    help = "Run assistant turns sent over the (Redis) channel layer, after recovering dead ones."

    def handle(self, *args: Any, **options: Any) -> None:
        recovered = streaming.recover_stale_turns()
        if recovered:
            self.stdout.write(f"recovered {len(recovered)} turn(s)")
        call_command("runworker", events.TURN_CHANNEL)
