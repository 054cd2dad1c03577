"""A Channels worker for assistant turns: recover turns of dead processes, then runworker piweb-turns."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from sessions_app import events
from sessions_app.live import streaming


def keep_connections() -> None:
    """This process reaches the database from one thread (database_sync_to_async), so it can keep
    its connection: with PostgreSQL, a connection per call forked a backend for every poll and
    partial save of every running turn. A broken connection is replaced at the next call."""
    for alias in connections:
        db = connections.settings[alias]
        if not db.get("CONN_MAX_AGE"):
            db.update(CONN_MAX_AGE=None, CONN_HEALTH_CHECKS=True)


class Command(BaseCommand):
    help = "Run assistant turns sent over the (Redis) channel layer, after recovering dead ones."

    def handle(self, *args: Any, **options: Any) -> None:
        keep_connections()
        recovered = streaming.recover_stale_turns()
        if recovered:
            self.stdout.write(f"recovered {len(recovered)} turn(s)")
        call_command("runworker", events.TURN_CHANNEL)
