from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.access.revoke import user_deactivate
from sessions_app.management.users import user_named


class Command(BaseCommand):
    help = "Deactivate USERNAME: no sign-in or tokens, their browser sessions deleted, open websockets closed."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["username"])
        user_deactivate(user=user)
        self.stdout.write(f"deactivated {user.username}")
