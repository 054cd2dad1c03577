from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.store.integrity import sessions_verify


class Command(BaseCommand):
    help = "Check every session's entry hash chain; name the first rewritten entry of each bad session."

    def handle(self, *args: Any, **options: Any) -> None:
        checked = bad = 0
        for session, finding in sessions_verify():
            checked += 1
            if finding is not None:
                bad += 1
                where = f"entry #{finding.seq} ({finding.entry_id})" if finding.seq else "session"
                self.stdout.write(self.style.ERROR(f"{session.public_id}: {where}: {finding.message}"))
        if bad:
            raise CommandError(f"{bad} of {checked} sessions failed verification")
        self.stdout.write(self.style.SUCCESS(f"{checked} sessions verified, all intact"))
