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
from pathlib import Path

import pytest
import redis
import websockets

from sessions_app.core import jsjson
from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services
from tests.servers import Processes, login_cookie, post_form, server_env

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("PIWEB_REDIS_URL") or "redis://127.0.0.1:6379/5"


@pytest.fixture
def procs(processes: Processes) -> Processes:
    redis.Redis.from_url(REDIS_URL).flushdb()
    return processes


def env(**extra: str) -> dict[str, str]:
    return server_env(PIWEB_REDIS_URL=REDIS_URL, **extra)


async def watch(base: str, sid: str, sessionid: str, until: str, *, on_frame=None, timeout: float = 20) -> list[str]:
    frames: list[str] = []
    async with websockets.connect(
        base.replace("http://", "ws://") + f"/ws/sessions/{sid}/",
        additional_headers={"Cookie": f"sessionid={sessionid}", "Origin": base},
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
    base_a = procs.daphne(env(PIWEB_DEMO_DELAY="0.01"))
    base_b = procs.daphne(env(PIWEB_DEMO_DELAY="0.01"))
    procs.worker(env(PIWEB_DEMO_DELAY="0.01"))
    sent = False

    async def send_once(frame: str, frames: list[str]) -> None:
        nonlocal sent
        if not sent and "chat-presence" in frame:
            sent = True
            status, _ = await asyncio.to_thread(
                post_form, base_a, f"/sessions/{session.public_id}/chat/send/", {"text": "across processes"}, cookie
            )
            assert status == 200

    frames = asyncio.run(watch(base_b, session.public_id, cookie, r"data-gone></div></div>$", on_frame=send_once))
    reply = Entry.objects.get(session=session, role="assistant")
    text = jsjson.loads(reply.raw)["message"]["content"][0]["text"]
    assert "across processes" in text and streamed(frames) == text
    assert any(f'id="chat-e-{reply.entry_id}"' in f for f in frames)


def test_worker_killed_mid_turn_then_restarted_saves_partial_as_error(procs, alice):
    session = services.session_create(owner=alice, name="crash")
    cookie = login_cookie(alice)
    base = procs.daphne(env(PIWEB_DEMO_DELAY="0.15"))
    worker = procs.worker(env(PIWEB_DEMO_DELAY="0.15"))
    state = {"sent": False, "killed": False}

    async def drive(frame: str, frames: list[str]) -> None:
        if not state["sent"] and "chat-presence" in frame:
            state["sent"] = True
            await asyncio.to_thread(
                post_form, base, f"/sessions/{session.public_id}/chat/send/", {"text": "crash"}, cookie
            )
        elif not state["killed"] and len(streamed(frames).split()) >= 4:
            state["killed"] = True
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            procs.worker(env(PIWEB_DEMO_DELAY="0.15"))  # recovers the dead worker's turn at startup

    frames = asyncio.run(watch(base, session.public_id, cookie, r"data-gone></div></div>$", on_frame=drive))
    assert state["killed"]
    reply = Entry.objects.get(session=session, role="assistant")
    msg = jsjson.loads(reply.raw)["message"]
    assert msg["stopReason"] == "error" and msg["errorMessage"]
    saved = msg["content"][0]["text"]
    assert saved and saved.startswith(streamed(frames))  # flushed before published: nothing shown is lost
    assert StreamingTurn.objects.get(session=session).status == "error"
