from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.store.integrity import sessions_verify


class Command(BaseCommand):
    help = (
        "Check every session: its entries' hash chain, the columns derived from them, and that the"
        " audit trail accounts for it and its owner and team. Names what differs. (verify_audit checks"
        " the audit trail itself.)"
    )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        checked = bad = entries = 0
        for report in sessions_verify():
            checked += 1
            entries += report.entries
            if report.findings:
                bad += 1
                for finding in report.findings:
                    self.stdout.write(self.style.ERROR(f"{report.public_id}: {finding}"))
                if report.more:
                    self.stdout.write(self.style.ERROR(f"{report.public_id}: and {report.more} more"))
        elapsed = time.perf_counter() - started
        if bad:
            raise CommandError(f"{bad} of {checked} sessions failed verification")
        self.stdout.write(
            self.style.SUCCESS(f"{checked} sessions ({entries} entries) verified in {elapsed:.2f} s, all intact")
        )
