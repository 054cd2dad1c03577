from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.access.audit import audit_verify


class Command(BaseCommand):
    help = "Check the audit trail's hash chain; name the first record that was changed, removed or inserted."

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        report = audit_verify()
        elapsed = time.perf_counter() - started
        if report.finding is not None:
            self.stdout.write(self.style.ERROR(f"record #{report.finding.seq}: {report.finding.message}"))
            raise CommandError(f"audit chain broken at record #{report.finding.seq} ({report.checked} records intact)")
        self.stdout.write(
            self.style.SUCCESS(f"{report.checked} audit records verified in {elapsed:.2f} s, chain intact")
        )
