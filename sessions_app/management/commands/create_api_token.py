from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.access.api_tokens import SCOPES, api_token_create
from sessions_app.management.users import user_named


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
        user = user_named(options["username"])
        if options["expires_days"] is not None and options["expires_days"] < 1:
            raise CommandError("--expires-days must be at least 1")
        _, token = api_token_create(
            user=user, name=options["name"], scope=options["scope"], expires_days=options["expires_days"]
        )
        self.stdout.write(token)
