"""Who is viewing a session: one Viewer row per open websocket, shared by every process.

Rows are refreshed by each process's janitor (streaming.ensure_janitor); rows of a process that
died stop being refreshed and drop out of the list after PIWEB_PRESENCE_TTL_SECONDS.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.models import Session, Viewer

_local: set[str] = set()  # channel names of this process's open viewers


def ttl() -> float:
    return float(settings.PIWEB_PRESENCE_TTL_SECONDS)


def join(*, session: Session, user: User, channel_name: str) -> list[str]:
    Viewer.objects.update_or_create(
        channel_name=channel_name, defaults={"session": session, "user": user, "seen_at": timezone.now()}
    )
    _local.add(channel_name)
    return viewers(session_pk=session.pk)


def leave(*, session_pk: int, channel_name: str) -> list[str]:
    _local.discard(channel_name)
    Viewer.objects.filter(channel_name=channel_name).delete()
    return viewers(session_pk=session_pk)


def viewers(*, session_pk: int) -> list[str]:
    fresh = timezone.now() - timedelta(seconds=ttl())
    names = Viewer.objects.filter(session_id=session_pk, seen_at__gte=fresh).values_list("user__username", flat=True)
    return sorted(set(names))


def heartbeat() -> None:
    now = timezone.now()
    if _local:
        Viewer.objects.filter(channel_name__in=list(_local)).update(seen_at=now)
    Viewer.objects.filter(seen_at__lt=now - timedelta(seconds=ttl() * 4)).delete()
