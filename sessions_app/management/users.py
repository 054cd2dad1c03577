"""What the management commands share."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import CommandError


def user_named(username: str) -> User:
    """The user with this username, or a CommandError that names it."""
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user
