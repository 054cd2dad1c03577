"""Live chat fixtures: alice's session, websocket helpers, frame parsing.

Runs on whatever CHANNEL_LAYERS says: in-memory by default, Redis when PIWEB_REDIS_URL is set.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
import pytest_asyncio
from channels.layers import get_channel_layer
from django.test import AsyncClient, Client

from sessions_app.store import services


@pytest.fixture(autouse=True)
def _chat_settings(settings):
    settings.PIWEB_DEMO_DELAY = "0.002"
    settings.PIWEB_JANITOR = False
    settings.PIWEB_OPENAI_API_KEY = ""
    settings.PIWEB_ANTHROPIC_API_KEY = ""


@pytest.fixture
def chat_session(alice):
    return services.session_create(owner=alice, name="chat")


class HtmxAsyncClient(AsyncClient):
    """AsyncClient sending HX-Request on every request (constructor headers do not reach ASGI scopes)."""

    async def post(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("headers", {"HX-Request": "true"})
        return await super().post(*args, **kwargs)


@pytest.fixture
def alice_async(alice):
    client = HtmxAsyncClient()
    c = Client()
    c.force_login(alice)
    client.cookies = c.cookies
    return client


async def flush_layer() -> None:
    layer = get_channel_layer()
    if hasattr(layer, "flush"):
        await layer.flush()


@pytest_asyncio.fixture
async def turn_worker():
    """With a shared (Redis) layer turns go to the piweb-turns channel: run a worker loop here."""
    from sessions_app.events import TURN_CHANNEL
    from sessions_app.live import streaming

    await flush_layer()
    if not streaming.uses_worker():
        yield None
        return
    layer = get_channel_layer()

    async def loop() -> None:
        while True:
            msg = await layer.receive(TURN_CHANNEL)
            streaming.start_local(int(msg["turn"]))

    task = asyncio.create_task(loop())
    yield task
    task.cancel()
    with contextlib.suppress(BaseException):
        await task


@pytest.fixture(autouse=True)
def _sessions_deleted_after(db):
    """Transactional tests end with a flush (a plain DELETE on SQLite) that the append-only
    trigger refuses; delete sessions through the service instead."""
    from sessions_app.models import Session

    yield
    for leftover in Session.objects.all():
        services.session_delete(session=leftover)
