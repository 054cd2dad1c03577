from __future__ import annotations

from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from sessions_app.access import signin  # noqa: F401  (signin connects the sign-in audit receivers)
        from sessions_app.render import markup
        from sessions_app.store import checkpoint, reviews

        connection_created.connect(checkpoint.connection_created, dispatch_uid="piweb-wal-watch")
        reviews.use_renderer(lambda text: str(markup.markdown(text)))
