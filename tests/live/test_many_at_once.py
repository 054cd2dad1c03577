"""A team at once, on one server as deployed: eight people send chat messages at the same moment
while fifty browsers watch their sessions. Every send is answered (none fails with "database is
locked"), every reply is stored and reaches every viewer of its session, and a finished turn
leaves no thread behind."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import websockets
from django.contrib.auth.models import User

from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services
from tests.servers import Processes, login_cookie, post_form, server_env

pytestmark = [pytest.mark.django_db(transaction=True)]
SENDERS, VIEWERS = 8, 50


async def watch(base: str, sid: str, cookie: str, connected: asyncio.Event, count: list[int]) -> list[str]:
    """A viewer's frames until its session's reply has ended."""
    frames: list[str] = []
    url = base.replace("http://", "ws://") + f"/ws/sessions/{sid}/"
    async with websockets.connect(url, additional_headers={"Cookie": f"sessionid={cookie}", "Origin": base}) as ws:
        async with asyncio.timeout(90):
            while True:
                frame = str(await ws.recv())
                frames.append(frame)
                if "chat-presence" in frame and not connected.is_set():
                    count[0] += 1
                    if count[0] == VIEWERS:
                        connected.set()
                if "data-gone" in frame:
                    return frames


def test_eight_sends_at_once_with_fifty_viewers(processes: Processes):
    env = server_env(PIWEB_DEMO_DELAY="0.005")
    base = processes.daphne(env)
    if env.get("PIWEB_REDIS_URL"):
        processes.worker(env)
    users = [User.objects.create_user(f"member-{i}") for i in range(SENDERS)]
    sessions = [services.session_create(owner=u, name=f"chat {i}") for i, u in enumerate(users)]
    cookies = [login_cookie(u) for u in users]

    async def scenario() -> tuple[list[list[str]], list[tuple[int, str]]]:
        connected, count = asyncio.Event(), [0]
        viewers = [
            asyncio.create_task(watch(base, sessions[i % SENDERS].public_id, cookies[i % SENDERS], connected, count))
            for i in range(VIEWERS)
        ]
        await asyncio.wait_for(connected.wait(), 60)
        barrier = threading.Barrier(SENDERS, timeout=30)

        def send(i: int) -> tuple[int, str]:
            barrier.wait()
            return post_form(base, f"/sessions/{sessions[i].public_id}/chat/send/", {"text": f"hello {i}"}, cookies[i])

        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=SENDERS) as pool:  # one thread each: they meet at the barrier
            answers = await asyncio.gather(*(loop.run_in_executor(pool, send, i) for i in range(SENDERS)))
        return await asyncio.gather(*viewers), answers

    frames, answers = asyncio.run(scenario())
    assert [status for status, _ in answers] == [200] * SENDERS, [body[:200] for _, body in answers]
    for i, session in enumerate(sessions):
        reply = Entry.objects.get(session=session, role="assistant")
        for k in range(i, VIEWERS, SENDERS):  # each viewer of this session saw its reply stored
            assert any(f'id="chat-e-{reply.entry_id}"' in f for f in frames[k])
    assert not StreamingTurn.objects.exclude(status="done").exists()
    assert processes.errors() == []

    # Eight more turns: the process keeps no thread of the finished ones (it once kept one per turn).
    threads = Path(f"/proc/{processes.procs[0].pid}/task")
    before = len(list(threads.iterdir()))
    for i in range(SENDERS):
        assert post_form(base, f"/sessions/{sessions[i].public_id}/chat/send/", {"text": "again"}, cookies[i])[0] == 200
    deadline = time.monotonic() + 60
    while StreamingTurn.objects.exclude(status="done").exists():
        assert time.monotonic() < deadline, "turns still running"
        time.sleep(0.1)
    assert len(list(threads.iterdir())) <= before + 2
