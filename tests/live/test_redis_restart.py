"""Redis restarted under open connections: viewers are not left hanging and nothing is lost.

Uses a private redis-server on a free port, so the machine's own Redis is never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from sessions_app.models import Entry
from sessions_app.store import services
from tests.live.sockets import connect, frames_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("private redis-server did not start")


@pytest.fixture
def private_redis(settings) -> Iterator[Callable[[], None]]:
    port = _free_port()
    procs = [_start(port)]
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # socket_timeout as piweb/settings.py sets it (tests/chat/test_layer_config.py)
            "CONFIG": {
                "hosts": [{"address": f"redis://127.0.0.1:{port}/0", "socket_timeout": 30}],
                "capacity": 2000,
                "expiry": 30,
            },
        }
    }

    def restart() -> None:
        procs[-1].kill()
        procs[-1].wait(5)
        procs.append(_start(port))

    yield restart
    for proc in procs:
        proc.kill()
        proc.wait(5)


async def _still_live_or_closed(comm: WebsocketCommunicator, name: str) -> bool:
    """True if the open socket shows the change; False if the connection ended: the consumer closed
    it or failed on the lost Redis connection, which daphne turns into a close (1011), and the
    browser's ws extension reconnects to a fresh snapshot. Hanging silently fails the test."""
    try:
        frames = await frames_until(comm, rf"Renamed to “{name}”", timeout=8)
    except AssertionError:
        raise AssertionError("the viewer neither saw the change nor was disconnected") from None
    except Exception:  # the application ended: what daphne reports to the browser as a close
        return False
    return bool(frames)


async def _reconnect(user: object, session: object, attempts: int = 3) -> WebsocketCommunicator:
    for attempt in range(attempts):
        try:
            comm = await connect(user, session)
            await frames_until(comm, "chat-presence")
            return comm
        except Exception:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


async def test_viewers_are_not_left_hanging_when_redis_restarts(chat_session, alice, private_redis):
    comm = await connect(alice, chat_session)
    await frames_until(comm, "chat-presence")
    await sync_to_async(private_redis)()
    # A write while the layer reconnects is committed whatever happens to its notification.
    await sync_to_async(services.session_rename)(session=chat_session, name="during the restart")
    assert await Entry.objects.filter(session=chat_session, type="session_info").acount() == 2
    await asyncio.sleep(0.5)
    await sync_to_async(services.session_rename)(session=chat_session, name="after the restart")
    # The open socket shows the change or is closed (never hangs silently)...
    await _still_live_or_closed(comm, "after the restart")
    with contextlib.suppress(Exception):
        await comm.disconnect()
    # ...and a (re)connecting viewer is live again. Like htmx's ws extension, it retries: the
    # first use of a pooled Redis connection from before the restart can still fail.
    again = await _reconnect(alice, chat_session)
    await sync_to_async(services.session_rename)(session=chat_session, name="on a new connection")
    await frames_until(again, "Renamed to “on a new connection”", timeout=5)
    await again.disconnect()
    assert await Entry.objects.filter(session=chat_session, type="session_info").acount() == 4
