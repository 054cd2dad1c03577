"""GET /healthz for load balancers (and /favicon.ico): the database, the channel layer and the cache, each checked.

200 {"status": "ok", "checks": {...}} when all answer; 503 with the failing ones otherwise. It
reads nothing of anybody's, so it needs no sign-in (SECURE_SSL_REDIRECT exempts it too).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

TIMEOUT_S = 3.0


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _cache() -> None:
    token = secrets.token_hex(8)
    cache.set("piweb:healthz", token, 30)
    if cache.get("piweb:healthz") != token:
        raise RuntimeError("the cache did not keep a value")


async def _channel_layer() -> None:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "healthz.ping"})
    message = await layer.receive(channel)
    if message.get("type") != "healthz.ping":
        raise RuntimeError("the channel layer returned another message")


async def _check(name: str, check: Callable[[], None] | Callable[[], Awaitable[None]]) -> tuple[str, str]:
    try:
        if asyncio.iscoroutinefunction(check):
            await asyncio.wait_for(check(), TIMEOUT_S)
        else:
            await asyncio.wait_for(sync_to_async(check)(), TIMEOUT_S)
    except Exception as exc:
        return name, f"fail: {type(exc).__name__}: {exc}"[:200]
    return name, "ok"


@never_cache
@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    results = dict(
        await asyncio.gather(
            _check("database", _database), _check("channel_layer", _channel_layer), _check("cache", _cache)
        )
    )
    healthy = all(value == "ok" for value in results.values())
    return JsonResponse({"status": "ok" if healthy else "fail", "checks": results}, status=200 if healthy else 503)


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """/favicon.ico, which browsers ask for when a page names no icon: the app's own."""
    return HttpResponseRedirect(static("piweb/favicon.svg"))
