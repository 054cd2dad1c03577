from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.access.audit import auditor_grant
from sessions_app.management.users import user_named


class Command(BaseCommand):
    help = "Let USERNAME read the audit log at /audit/ (adds them to the auditors group)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["username"])
        granted = auditor_grant(user=user)
        self.stdout.write(f"{user.username} {'may now read' if granted else 'could already read'} the audit log")
