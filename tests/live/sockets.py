"""Websocket helpers for the live tests: connect as a user, read frames, pick text out of them."""

from __future__ import annotations

import asyncio
import html
import re

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from sessions_app.models import StreamingTurn

ORIGIN = (b"origin", b"http://testserver")


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


async def wait_turns_done(session, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while await StreamingTurn.objects.filter(session=session, status__in=("queued", "streaming")).aexists():
        assert loop.time() < end, "turns still running"
        await asyncio.sleep(0.02)
