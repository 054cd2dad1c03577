"""Live chat fixtures: alice's session, websocket helpers, frame parsing.

Runs on whatever CHANNEL_LAYERS says: in-memory by default, Redis when PIWEB_REDIS_URL is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient, Client

from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services

ORIGIN = (b"origin", b"http://testserver")


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


def cookie_header(user) -> tuple[bytes, bytes]:
    c = Client()
    c.force_login(user)
    return (b"cookie", f"sessionid={c.cookies['sessionid'].value}".encode())


async def connect(user, session, *, query: str = "") -> WebsocketCommunicator:
    from piweb.asgi import application

    headers = [ORIGIN]
    if user is not None:
        headers.append(await sync_to_async(cookie_header)(user))
    comm = WebsocketCommunicator(application, f"/ws/sessions/{session.public_id}/{query}", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def frames_until(comm: WebsocketCommunicator, pattern: str, timeout: float = 10) -> list[str]:
    """Receive frames until one matches pattern (regex); returns all of them."""
    got: list[str] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        remaining = end - loop.time()
        assert remaining > 0, f"no frame matching {pattern!r} in {timeout}s; got {got[-3:]}"
        frame = await comm.receive_from(timeout=remaining)
        got.append(frame)
        if re.search(pattern, frame):
            return got


def delta_text(frames: list[str], turn: str, block: int = 0) -> str:
    pat = re.compile(rf'<span hx-swap-oob="beforeend:#turn-{turn}-b{block}" data-index="\d+"[^>]*>(.*?)</span>', re.S)
    return "".join(html.unescape(m) for f in frames for m in pat.findall(f))


def snapshot_text(frame: str, turn: str, block: int = 0) -> str:
    m = re.search(rf'<div id="turn-{turn}-b{block}" class="stream-block [^"]*">(.*?)</div>', frame, re.S)
    return html.unescape(m.group(1)) if m else ""


def turn_ids(frames: list[str]) -> list[str]:
    return [m for f in frames for m in re.findall(r'<article id="turn-([0-9a-f-]{36})"', f)]


def message(entry: Entry) -> dict[str, Any]:
    from sessions_app.core import jsjson

    data: dict[str, Any] = jsjson.loads(entry.raw)["message"]
    return data


async def wait_turns_done(session, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while await StreamingTurn.objects.filter(session=session, status__in=("queued", "streaming")).aexists():
        assert loop.time() < end, "turns still running"
        await asyncio.sleep(0.02)


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
