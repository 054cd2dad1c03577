from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.store import search_index


class Command(BaseCommand):
    help = "Rebuild the search index of every session from its stored entries (each session in its own transaction)."

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        sessions, documents = search_index.reindex_all()
        self.stdout.write(
            f"reindexed {sessions} session(s): {documents} document(s) in {time.monotonic() - started:.1f} s"
        )
