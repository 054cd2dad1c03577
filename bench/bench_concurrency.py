"""Many people at once on one server: concurrent chat sends while viewers watch.

    .venv/bin/python bench/bench_concurrency.py [--sends 8] [--viewers 50] [--rounds 3]
        [--appenders 4] [--database-url postgres://...] [--redis redis://...] [--workers 0]

Starts daphne (PIWEB_DEBUG=false) on a fresh SQLite file (or the given PostgreSQL database), one
session per sender, the viewers' websockets spread over those sessions, and a few REST clients
appending entries meanwhile. Each round, every sender POSTs a chat message at the same moment;
each reply streams from the demo model to that session's viewers. It reports every request that
failed (status and body), how long the sends and appends waited (median, p99, max), and whether
every reply was stored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def configure(db_path: Path, database_url: str | None, redis_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(
        DJANGO_SETTINGS_MODULE="piweb.settings",
        PIWEB_DEBUG="false",
        PIWEB_SECRET_KEY="bench-concurrency-secret-key-0123456789",
        PIWEB_ALLOWED_HOSTS="127.0.0.1",
        PIWEB_SQLITE_PATH=str(db_path),
        PIWEB_DEMO_DELAY="0.005",
        PIWEB_LOG_LEVEL="ERROR",
        PYTHONUNBUFFERED="1",
    )
    if database_url:
        env["PIWEB_DATABASE_URL"] = database_url
    if redis_url:
        env["PIWEB_REDIS_URL"] = redis_url
    os.environ.update({k: v for k, v in env.items() if k.startswith(("PIWEB_", "DJANGO_"))})
    return env


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, str, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, "", time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")[:300], time.perf_counter() - started


def get(url: str, cookie: str) -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie, "HX-Request": "true"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


async def viewer(
    url: str, page: str, cookie: str, origin: str, stop: asyncio.Event, frames: list[int], failures: list[Any]
) -> None:
    """A browser on the session page: its socket, and what the page's script fetches when the
    session changes (app.js onLive: the composer, redrawn from the session page, 120 ms after)."""
    import websockets

    loop = asyncio.get_running_loop()
    refresh: asyncio.TimerHandle | None = None
    fetches: set[asyncio.Task[None]] = set()

    def refetch() -> None:
        async def run() -> None:
            status = await loop.run_in_executor(None, get, page, cookie)
            if status >= 400:
                failures.append(("page", status, page))

        task = loop.create_task(run())
        fetches.add(task)
        task.add_done_callback(fetches.discard)

    async with websockets.connect(url, additional_headers={"Cookie": cookie, "Origin": origin}) as ws:
        while not stop.is_set():
            try:
                frame = await asyncio.wait_for(ws.recv(), 0.5)
            except TimeoutError:
                continue
            frames[0] += 1
            if 'id="session-live"' in str(frame) and (
                refresh is None or refresh.cancelled() or refresh.when() < loop.time()
            ):
                refresh = loop.call_later(0.12, refetch)
    if refresh is not None:
        refresh.cancel()
    await asyncio.gather(*fetches, return_exceptions=True)  # the page fetches still under way


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sends", type=int, default=8, help="concurrent chat sends per round (one session each)")
    ap.add_argument("--viewers", type=int, default=50, help="websocket viewers, spread over the sessions")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--appenders", type=int, default=4, help="REST clients appending entries meanwhile")
    ap.add_argument("--database-url")
    ap.add_argument("--redis", help="a Redis URL: the channel layer (and a turn worker per --workers)")
    ap.add_argument("--workers", type=int, default=1, help="turn workers with --redis")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        env = configure(Path(tmp) / "bench.sqlite3", args.database_url, args.redis)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.test import Client

        from sessions_app.access.api_tokens import api_token_create
        from sessions_app.models import Entry, Session
        from sessions_app.store import services

        User.objects.filter(username__startswith="bench-").delete()
        users = [User.objects.create_user(f"bench-{i}") for i in range(args.sends)]
        sessions = [services.session_create(owner=u, name=f"bench {i}") for i, u in enumerate(users)]
        cookies = []
        for user in users:
            client = Client()
            client.force_login(user)
            cookies.append(client.cookies["sessionid"].value)
        tokens = [api_token_create(user=users[i % len(users)], name="bench")[1] for i in range(args.appenders)]
        port = 18900 + os.getpid() % 90
        commands = [[sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"]]
        commands += [[sys.executable, "manage.py", "turn_worker"]] * (args.workers if args.redis else 0)
        log = Path(tmp) / "server.log"
        with log.open("ab") as out:
            procs = [subprocess.Popen(c, cwd=ROOT, env=env, stdout=out, stderr=out) for c in commands]
        base, origin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        results: dict[str, Any] = {"send": [], "append": [], "failures": []}
        try:
            loop = asyncio.new_event_loop()
            stop = asyncio.Event()
            frames = [0]
            viewers = []
            for i in range(args.viewers):
                sid = sessions[i % len(sessions)].public_id
                ws_url, page = f"ws://127.0.0.1:{port}/ws/sessions/{sid}/", f"{base}/sessions/{sid}/"
                cookie = f"sessionid={cookies[i % len(cookies)]}"
                viewers.append(
                    loop.create_task(viewer(ws_url, page, cookie, origin, stop, frames, results["failures"]))
                )
            thread = threading.Thread(target=loop.run_until_complete, args=(asyncio.gather(*viewers),), daemon=True)
            thread.start()
            time.sleep(2)  # the sockets connect, register their presence, get their snapshots
            appending = threading.Event()

            def append(k: int) -> None:
                sid = sessions[k % len(sessions)].public_id
                n = 0
                while not appending.is_set():
                    body = json.dumps({"type": "custom", "customType": "bench", "data": {"n": n}}).encode()
                    headers = {"Authorization": f"Bearer {tokens[k]}", "Content-Type": "application/json"}
                    status, text, waited = post(f"{base}/api/sessions/{sid}/entries", body, headers)
                    results["append"].append(waited)
                    if status >= 400:
                        results["failures"].append(("append", status, text))
                    n += 1
                    time.sleep(0.05)

            appenders = [threading.Thread(target=append, args=(k,)) for k in range(args.appenders)]
            for t in appenders:
                t.start()
            for _round in range(args.rounds):
                barrier = threading.Barrier(args.sends)

                def send(i: int, barrier: threading.Barrier = barrier) -> None:
                    headers = {
                        "Cookie": f"sessionid={cookies[i]}; csrftoken=benchtoken{i:022d}",
                        "X-CSRFToken": f"benchtoken{i:022d}", "Origin": origin, "HX-Request": "true",
                        "Content-Type": "application/x-www-form-urlencoded",
                    }  # fmt: skip
                    barrier.wait()
                    url = f"{base}/sessions/{sessions[i].public_id}/chat/send/"
                    status, text, waited = post(url, b"text=Tell+me+about+concurrency", headers)
                    results["send"].append(waited)
                    if status >= 400:
                        results["failures"].append(("send", status, text))

                senders = [threading.Thread(target=send, args=(i,)) for i in range(args.sends)]
                for t in senders:
                    t.start()
                for t in senders:
                    t.join()
                deadline = time.monotonic() + 60
                from sessions_app.models import StreamingTurn

                while StreamingTurn.objects.filter(status__in=("queued", "streaming")).exists():
                    assert time.monotonic() < deadline, "turns still running after 60 s"
                    time.sleep(0.1)
            appending.set()
            for t in appenders:
                t.join()
            loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=10)
            replies = Entry.objects.filter(session__in=sessions, role="assistant").count()
            threads = len(list(Path(f"/proc/{procs[0].pid}/task").iterdir()))
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=10)
        sends, appends = results["send"], results["append"]
        print(f"sends: {len(sends)}, waited median {statistics.median(sends) * 1000:.0f} ms, "
              f"p99 {pct(sends, 0.99) * 1000:.0f} ms, max {max(sends) * 1000:.0f} ms")  # fmt: skip
        print(f"appends: {len(appends)}, waited median {statistics.median(appends) * 1000:.1f} ms, "
              f"p99 {pct(appends, 0.99) * 1000:.0f} ms, max {max(appends) * 1000:.0f} ms")  # fmt: skip
        print(f"replies stored: {replies} of {args.sends * args.rounds}; frames received: {frames[0]}")
        print(f"threads in the daphne process at the end: {threads}")
        print(f"failures: {len(results['failures'])}")
        for kind, status, text in results["failures"][:10]:
            print(f"  {kind} {status}: {text[:200]!r}")
        errors = [line for line in log.read_text(errors="replace").splitlines() if "Error" in line or "locked" in line]
        print(f"server log lines with errors: {len(errors)}")
        for line in errors[:10]:
            print("  " + line[:200])
        Session.objects.filter(pk__in=[s.pk for s in sessions]).update()  # (the database goes with tmp)


if __name__ == "__main__":
    main()
