from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from sessions_app.access.audit import auditor_grant


class Command(BaseCommand):
    help = "Let USERNAME read the audit log at /audit/ (adds them to the auditors group)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        granted = auditor_grant(user=user)
        self.stdout.write(f"{user.username} {'may now read' if granted else 'could already read'} the audit log")
