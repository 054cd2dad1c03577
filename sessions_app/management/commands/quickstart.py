from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Migrate, collect the static files, create the demo user and sessions, and serve piweb with"
        " daphne on 127.0.0.1:8000."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("load_demo")
        self.stdout.write(f"Sign in at http://{options['addrport']}/ as demo / demo")
        # daphne's runserver (first in INSTALLED_APPS) serves ASGI: HTTP and websockets; WhiteNoise
        # serves the static files, as in production.
        call_command("runserver", options["addrport"], use_reloader=False, use_static_handler=False)
