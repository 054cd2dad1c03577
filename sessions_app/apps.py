from __future__ import annotations

from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import signin  # noqa: F401  (connects the sign-in audit receivers)
