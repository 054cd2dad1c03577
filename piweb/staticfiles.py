"""Static files: WhiteNoise's compressed, hashed manifest (with plain names as a fallback) and its
middleware, made usable in an async stack.

After collectstatic every URL carries its content hash (cached for a year). Before it, or for a
file the manifest does not know, Django's manifest storage raises ValueError and every page using
{% static %} would answer 500; here the plain name is used instead (WhiteNoise serves it from the
app's folders), and the missing collectstatic is logged once.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings as django_settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)


class ManifestWithFallback(CompressedManifestStaticFilesStorage):
    manifest_strict = False
    _warned = False

    def stored_name(self, name: str) -> str:
        try:
            return str(super().stored_name(name))
        except ValueError:
            if not ManifestWithFallback._warned:
                ManifestWithFallback._warned = True
                log.warning("static file %s is not in the manifest: run manage.py collectstatic", name)
            return name


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware, usable in an async stack as well.

    WhiteNoise's own is sync only, so under daphne Django would run every request's middleware in
    a thread and call async views (the chat commands) inside a short-lived loop there: the task a
    chat command starts, which streams the reply, would lose its loop's executor once the request
    ended. Finding a static file is a dict lookup and serving it opens the file; both stay as
    WhiteNoise does them."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any = None, settings: Any = django_settings) -> None:
        super().__init__(get_response, settings)
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:  # type: ignore[override]  # (WSGI's is environ, start_response)
        if iscoroutinefunction(self):
            return self._serve_or_pass(request)
        return super().__call__(request)

    async def _serve_or_pass(self, request: HttpRequest) -> HttpResponseBase:
        static_file = self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)
        if static_file is not None:
            return self.serve(static_file, request)  # type: ignore[no-any-return]
        return await self.get_response(request)  # type: ignore[no-any-return]
