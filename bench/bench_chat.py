"""Live chat benchmark: N viewers on one session, the demo model streaming as fast as it can.

Starts one daphne process (in-memory layer, a throwaway SQLite database), opens N websockets
(the `websockets` library), sends turns through the chat POST endpoint and measures, per delivered
delta frame, receive time minus the time its oldest token was produced (data-t). Also reports
deltas delivered per second and daphne's RSS growth per idle connection.

    .venv/bin/python bench/bench_chat.py [--viewers 50] [--turns 8] [--concurrent 4] [--interval-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def setup(db: str) -> tuple[str, str]:
    os.environ.update(DJANGO_SETTINGS_MODULE="piweb.settings", PIWEB_SQLITE_PATH=db)
    os.environ.pop("PIWEB_REDIS_URL", None)
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from sessions_app import services

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench", password="x")
    session = services.session_create(owner=user, name="bench")
    client = Client()
    client.force_login(user)
    return session.public_id, client.cookies["sessionid"].value


def post(port: int, sid: str, cookie: str, text: str) -> None:
    token = "b" * 32
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/sessions/{sid}/chat/send/",
        data=f"text={urllib.request.quote(text)}".encode(),
        headers={"Cookie": f"sessionid={cookie}; csrftoken={token}", "X-CSRFToken": token, "HX-Request": "true",
                 "Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    urllib.request.urlopen(req, timeout=30).read()


STAMP = re.compile(r'data-index="(\d+)" data-t="([\d.]+)"')


async def main(args: argparse.Namespace) -> None:
    import websockets

    with tempfile.TemporaryDirectory() as tmp:
        sid, cookie = await asyncio.to_thread(setup, str(Path(tmp) / "bench.sqlite3"))
        port = free_port()
        env = {**os.environ, "PIWEB_DEMO_DELAY": str(args.demo_delay),
               "PIWEB_STREAM_INTERVAL_MS": str(args.interval_ms),
               "PIWEB_LOG_LEVEL": "WARNING"}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-p", str(port), "piweb.asgi:application"], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
            url = f"ws://127.0.0.1:{port}/ws/sessions/{sid}/"
            warm = await websockets.connect(url, additional_headers=headers)
            await warm.recv()
            await asyncio.sleep(0.5)
            before = rss_kb(proc.pid)
            sockets = [await websockets.connect(url, additional_headers=headers) for _ in range(args.viewers)]
            await asyncio.sleep(1.0)
            after = rss_kb(proc.pid)
            delays: list[float] = []
            delivered = 0
            ends = 0
            done = asyncio.Event()
            expected_ends = args.turns * len(sockets)

            async def reader(ws: websockets.ClientConnection) -> None:
                nonlocal delivered, ends
                async for frame in ws:
                    now = time.time()
                    assert isinstance(frame, str)
                    m = STAMP.search(frame)
                    if m:
                        delivered += 1
                        delays.append((now - float(m.group(2))) * 1000)
                    elif 'hx-swap-oob="delete"></div>' in frame and frame.startswith('<div id="turn-'):
                        ends += 1
                        if ends >= expected_ends:
                            done.set()

            readers = [asyncio.create_task(reader(ws)) for ws in sockets]
            await asyncio.sleep(0.5)
            started = time.monotonic()
            sem = asyncio.Semaphore(args.concurrent)

            async def one(i: int) -> None:
                async with sem:
                    await asyncio.to_thread(post, port, sid, cookie, f"turn {i} " + "word " * 50)

            await asyncio.gather(*(one(i) for i in range(args.turns)))
            await asyncio.wait_for(done.wait(), timeout=300)
            elapsed = time.monotonic() - started
            for t in readers:
                t.cancel()
            for ws in [*sockets, warm]:
                await ws.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    delays.sort()
    p99 = delays[int(len(delays) * 0.99) - 1] if delays else float("nan")
    print(f"viewers={args.viewers} turns={args.turns} concurrent={args.concurrent} interval={args.interval_ms}ms "
          f"demo_delay={args.demo_delay}s")  # fmt: skip
    print(f"delta frames delivered: {delivered} in {elapsed:.2f}s = {delivered / elapsed:.0f}/s")
    print(f"token-to-socket delay (oldest token in each delta): median {statistics.median(delays):.1f} ms, "
          f"p99 {p99:.1f} ms, max {delays[-1]:.1f} ms")  # fmt: skip
    print(f"daphne RSS per idle connection: {(after - before) / args.viewers:.1f} KiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=50)
    parser.add_argument("--demo-delay", type=float, default=0.0)
    asyncio.run(main(parser.parse_args()))
