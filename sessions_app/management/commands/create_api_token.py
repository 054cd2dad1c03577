from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.access.api_tokens import SCOPES, api_token_create


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it (it is stored hashed and cannot be shown again)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--scope", choices=list(SCOPES), default="write", help="read: GET only; push: piweb sync only"
        )
        parser.add_argument("--expires-days", type=int, default=None, help="days until it stops working")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        try:
            user = User.objects.get(username=options["username"])
        except User.DoesNotExist:
            raise CommandError(f"no user named {options['username']!r}") from None
        if options["expires_days"] is not None and options["expires_days"] < 1:
            raise CommandError("--expires-days must be at least 1")
        _, token = api_token_create(
            user=user, name=options["name"], scope=options["scope"], expires_days=options["expires_days"]
        )
        self.stdout.write(token)
