from __future__ import annotations

import sqlite3
from typing import TypeVar

from django.apps import AppConfig

_T = TypeVar("_T")


def _bound_as_is(value: _T) -> _T:
    return value


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from sessions_app.access import signin  # noqa: F401  (signin connects the sign-in audit receivers)
        from sessions_app.store import checkpoint

        connection_created.connect(checkpoint.connection_created, dispatch_uid="piweb-wal-watch")
        # sqlite3 looks for an adapter for every parameter that is not an exact int, float or
        # str. For None, bytes and memoryview it finds none only after a failed attribute lookup
        # on its PrepareProtocol type that formats an AttributeError message: ~8% of the
        # instructions of a bulk entry insert. An adapter that returns the value makes it one
        # dict lookup; what is bound does not change.
        for kind in (type(None), bytes, memoryview):
            sqlite3.register_adapter(kind, _bound_as_is)
