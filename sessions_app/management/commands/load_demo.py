from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from sessions_app.models import Session
from sessions_app.store.demo import demo_sessions_create


class Command(BaseCommand):
    help = "Create the demo user (demo / demo) and demo sessions, unless they exist."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user, created = User.objects.get_or_create(username=options["username"])
        if created:
            user.set_password(options["password"])
            user.save()
        if Session.objects.filter(owner=user).exists():
            self.stdout.write(f"Demo sessions for {user} already exist.")
            return
        sessions = demo_sessions_create(owner=user)
        self.stdout.write(self.style.SUCCESS(f"Created {len(sessions)} demo sessions for {user}."))
