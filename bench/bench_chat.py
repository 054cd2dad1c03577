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

    from sessions_app.store import services

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
# The stream_end frame: the streaming turn's tombstone.
END = re.compile(r'<div hx-swap-oob="beforeend:#chat-streaming">'
                 r'<div id="turn-[^"]+" data-gone></div></div>')  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    import websockets

    with tempfile.TemporaryDirectory() as tmp:
        sid, cookie = await asyncio.to_thread(setup, str(Path(tmp) / "bench.sqlite3"))
        port = free_port()
        env = {**os.environ, "PIWEB_DEMO_DELAY": str(args.demo_delay),
               "PIWEB_STREAM_INTERVAL_MS": str(args.interval_ms),
               "PIWEB_LOG_LEVEL": "WARNING"}  # fmt: skip
        if args.redis:
            env["PIWEB_REDIS_URL"] = args.redis
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-p", str(port), "piweb.asgi:application"], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        worker = None
        if args.redis:
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "turn_worker"], cwd=ROOT, env=env,
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
            delays: list[float] = []
            delivered = 0
            ends = 0
            done = asyncio.Event()
            measuring = False
            expected_ends = args.turns * args.viewers

            async def reader(ws: websockets.ClientConnection, snapshot: asyncio.Event) -> None:
                """Reads every frame from the start (an unread socket stops answering pings)."""
                nonlocal delivered, ends
                async for frame in ws:
                    now = time.time()
                    snapshot.set()
                    if not measuring:
                        continue
                    assert isinstance(frame, str)
                    m = STAMP.search(frame)
                    if m:
                        delivered += 1
                        delays.append((now - float(m.group(2))) * 1000)
                    elif END.fullmatch(frame):
                        ends += 1
                        if ends >= expected_ends:
                            done.set()

            async def open_one() -> tuple[websockets.ClientConnection, asyncio.Task[None]]:
                ws = await websockets.connect(url, additional_headers=headers, max_queue=None)
                got = asyncio.Event()
                task = asyncio.create_task(reader(ws, got))
                await got.wait()  # the snapshot arrived
                return ws, task

            warm, warm_task = await open_one()
            await asyncio.sleep(0.5)
            before = rss_kb(proc.pid)
            idle_count = max(args.idle, args.viewers)
            opened = [await open_one() for _ in range(idle_count)]
            await asyncio.sleep(1.0)
            after = rss_kb(proc.pid)
            for ws, task in opened[args.viewers :]:
                task.cancel()
                await ws.close()
            opened = opened[: args.viewers]
            sockets = [ws for ws, _ in opened]
            readers = [task for _, task in opened] + [warm_task]
            await asyncio.sleep(1.0)  # presence frames settle
            measuring = True
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
            for p in (proc, worker):
                if p is not None:
                    p.terminate()
                    p.wait(timeout=10)
    delays.sort()
    p99 = delays[max(0, int(len(delays) * 0.99) - 1)] if delays else float("nan")
    print(f"layer={'redis' if args.redis else 'in-memory'} viewers={args.viewers} turns={args.turns} "
          f"concurrent={args.concurrent} interval={args.interval_ms}ms demo_delay={args.demo_delay}s "
          f"load={os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"delta frames delivered: {delivered} in {elapsed:.2f}s = {delivered / elapsed:.0f}/s")
    if delays:
        print(f"token-to-socket delay (oldest token in each delta): median {statistics.median(delays):.1f} ms, "
              f"p99 {p99:.1f} ms, max {delays[-1]:.1f} ms")  # fmt: skip
    print(f"daphne RSS per idle connection: {(after - before) / idle_count:.1f} KiB (over {idle_count} sockets)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=10)
    parser.add_argument("--demo-delay", type=float, default=0.005)
    parser.add_argument("--idle", type=int, default=200, help="sockets opened for the memory measurement")
    parser.add_argument("--redis", default="", help="channel layer URL (a turn worker process runs the turns)")
    asyncio.run(main(parser.parse_args()))
