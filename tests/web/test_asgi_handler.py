from __future__ import annotations

from asgiref.sync import iscoroutinefunction

from piweb.asgi import django_asgi_app


def test_the_middleware_chain_is_loaded_whole_in_sync_mode() -> None:
    # An async chain would hop to a thread and back for each hook of every MiddlewareMixin middleware.
    chain = getattr(django_asgi_app, "_middleware_chain", None)  # (Django sets it; the stubs do not declare it)
    assert chain is not None and not iscoroutinefunction(chain)
