"""Turn replies left streaming by a process that died into assistant entries (stopReason error)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.live import streaming


class Command(BaseCommand):
    help = "Save turns whose runner died (or every unfinished turn with --all) with stopReason error."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--all", action="store_true", help="treat every unfinished turn as dead (no server is running)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        recovered = streaming.recover_stale_turns(everything=options["all"])
        self.stdout.write(f"recovered {len(recovered)} turn(s)")
