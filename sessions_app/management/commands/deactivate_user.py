from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from sessions_app.access.revoke import user_deactivate


class Command(BaseCommand):
    help = "Deactivate USERNAME: no sign-in or tokens, their browser sessions deleted, open websockets closed."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        user_deactivate(user=user)
        self.stdout.write(f"deactivated {user.username}")
