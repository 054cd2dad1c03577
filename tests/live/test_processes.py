"""Real processes on one Redis: two daphne servers and a turn worker.

Whatever layer the test process itself uses, these subprocesses always share Redis
(PIWEB_REDIS_URL, default redis://127.0.0.1:6379/5) and the test database.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import websockets
from django.db import connection
from django.test import Client
from django.utils.crypto import get_random_string

from sessions_app.core import jsjson
from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("PIWEB_REDIS_URL") or "redis://127.0.0.1:6379/5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["PIWEB_SQLITE_PATH"] = str(db["NAME"])
    else:
        user = db.get("USER") or "postgres"
        env["PIWEB_DATABASE_URL"] = (
            f"postgres://{user}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
        )
    env.update(
        DJANGO_SETTINGS_MODULE="piweb.settings",
        PIWEB_REDIS_URL=REDIS_URL,
        PIWEB_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


class Procs:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], **env: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, cwd=ROOT, env=child_env(**env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(proc)
        return proc

    def daphne(self, **env: str) -> int:
        port = free_port()
        self.start(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"], **env
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return port
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"daphne on {port} did not start")

    def worker(self, **env: str) -> subprocess.Popen[bytes]:
        return self.start([sys.executable, "manage.py", "turn_worker"], **env)

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stderr is not None:
                p.stderr.close()


@pytest.fixture
def procs() -> Iterator[Procs]:
    redis.Redis.from_url(REDIS_URL).flushdb()
    running = Procs()
    yield running
    running.stop_all()


def login_cookie(user) -> str:
    c = Client()
    c.force_login(user)
    return c.cookies["sessionid"].value


def post(port: int, path: str, data: dict[str, str], sessionid: str) -> int:
    token = get_random_string(32)
    body = "&".join(f"{k}={urllib.parse.quote(v)}" for k, v in data.items()).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        headers={
            "Cookie": f"sessionid={sessionid}; csrftoken={token}",
            "X-CSRFToken": token,
            "HX-Request": "true",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


async def watch(port: int, sid: str, sessionid: str, until: str, *, on_frame=None, timeout: float = 20) -> list[str]:
    frames: list[str] = []
    async with websockets.connect(
        f"ws://127.0.0.1:{port}/ws/sessions/{sid}/",
        additional_headers={"Cookie": f"sessionid={sessionid}", "Origin": f"http://127.0.0.1:{port}"},
    ) as ws:
        async with asyncio.timeout(timeout):
            while True:
                frame = await ws.recv()
                assert isinstance(frame, str)
                frames.append(frame)
                if on_frame is not None:
                    await on_frame(frame, frames)
                if re.search(until, frame):
                    return frames


def streamed(frames: list[str]) -> str:
    spans = re.findall(
        r'<span hx-swap-oob="beforeend:#turn-[^"]+-b0" data-index="\d+"[^>]*>(.*?)</span>', "".join(frames), re.S
    )
    return "".join(html.unescape(s) for s in spans)


def test_viewer_on_one_daphne_sees_turn_run_through_the_other(procs, alice):
    session = services.session_create(owner=alice, name="scale out")
    cookie = login_cookie(alice)
    port_a = procs.daphne(PIWEB_DEMO_DELAY="0.01")
    port_b = procs.daphne(PIWEB_DEMO_DELAY="0.01")
    procs.worker(PIWEB_DEMO_DELAY="0.01")
    sent = False

    async def send_once(frame: str, frames: list[str]) -> None:
        nonlocal sent
        if not sent and "chat-presence" in frame:
            sent = True
            status = await asyncio.to_thread(
                post, port_a, f"/sessions/{session.public_id}/chat/send/", {"text": "across processes"}, cookie
            )
            assert status == 200

    frames = asyncio.run(watch(port_b, session.public_id, cookie, r"data-gone></div></div>$", on_frame=send_once))
    reply = Entry.objects.get(session=session, role="assistant")
    text = jsjson.loads(reply.raw)["message"]["content"][0]["text"]
    assert "across processes" in text and streamed(frames) == text
    assert any(f'id="chat-e-{reply.entry_id}"' in f for f in frames)


def test_worker_killed_mid_turn_then_restarted_saves_partial_as_error(procs, alice):
    session = services.session_create(owner=alice, name="crash")
    cookie = login_cookie(alice)
    port = procs.daphne(PIWEB_DEMO_DELAY="0.15")
    worker = procs.worker(PIWEB_DEMO_DELAY="0.15")
    state = {"sent": False, "killed": False}

    async def drive(frame: str, frames: list[str]) -> None:
        if not state["sent"] and "chat-presence" in frame:
            state["sent"] = True
            await asyncio.to_thread(post, port, f"/sessions/{session.public_id}/chat/send/", {"text": "crash"}, cookie)
        elif not state["killed"] and len(streamed(frames).split()) >= 4:
            state["killed"] = True
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            procs.worker(PIWEB_DEMO_DELAY="0.15")  # recovers the dead worker's turn at startup

    frames = asyncio.run(watch(port, session.public_id, cookie, r"data-gone></div></div>$", on_frame=drive))
    assert state["killed"]
    reply = Entry.objects.get(session=session, role="assistant")
    msg = jsjson.loads(reply.raw)["message"]
    assert msg["stopReason"] == "error" and msg["errorMessage"]
    saved = msg["content"][0]["text"]
    assert saved and saved.startswith(streamed(frames))  # flushed before published: nothing shown is lost
    assert StreamingTurn.objects.get(session=session).status == "error"
