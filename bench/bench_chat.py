"""Live chat benchmark: viewers' websockets on streaming sessions, the demo model as fast as it can.

One scenario starts its servers (daphne processes, plus turn workers with Redis), opens the viewers'
websockets (the `websockets` library) spread over sessions and processes, sends turns through the
chat POST endpoint and measures:
- per delivered delta frame, receive time minus the time its oldest token was produced (data-t);
- deltas delivered per second;
- per viewer and turn, the last frame of that turn (its end, and the stored message) after the reply
  was stored (the turn row's updated_at, written in the reply's transaction);
- the server processes' memory (RSS) per idle websocket;
- the CPU each process used while the turns ran (which one is the bottleneck).

On a machine doing other work, `nice -n -15` (for this script, and `renice` for Redis and
PostgreSQL) comes closer to a dedicated server's figures.

    .venv/bin/python bench/bench_chat.py [--viewers 50] [--sessions 1] [--turns 8] [--concurrent 4]
        [--interval-ms 10] [--demo-delay 0.005] [--idle 200]
        [--redis redis://127.0.0.1:6379/0] [--database-url postgres://...] [--daphnes 1] [--workers 1]

    # issue 20's figures in one run: in-memory (this tree, and --baseline's tree), then PostgreSQL,
    # Redis, two daphne processes and a worker: 50 viewers, 4 sessions x 12 viewers, 500 idle viewers
    .venv/bin/python bench/bench_chat.py --scale-out --redis redis://127.0.0.1:6379/0 \\
        --database-url postgres://postgres@127.0.0.1:5432/benchchat [--baseline /path/to/older/checkout]
    # (benchchat: a database of its own, `createdb benchchat`; the script migrates it)
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
import urllib.parse
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAMP = re.compile(r'data-index="(\d+)" data-t="([\d.]+)"')
TURN = re.compile(r'id="turn-([0-9a-f-]{36})" data-gone')  # the stream_end frame: the turn's tombstone


@dataclass(frozen=True)
class Scenario:
    title: str
    viewers: int = 50
    sessions: int = 1
    turns: int = 8
    concurrent: int = 4
    interval_ms: int = 10
    demo_delay: float = 0.005
    idle: int = 200
    redis: str = ""
    database_url: str = ""
    daphnes: int = 1
    workers: int = 1
    tree: Path = ROOT  # the checkout whose server runs


@dataclass
class Results:
    delays: list[float] = field(default_factory=list)  # ms, token to socket
    delivered: int = 0
    elapsed: float = 0.0
    after_stored: list[float] = field(default_factory=list)  # ms, per viewer and turn
    idle_kib: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # seconds used while the turns ran, by process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_by_name(names: list[str], procs: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """CPU seconds used so far by each named server process, and by this (the viewers') process."""
    return {n: cpu_s(p.pid) for n, p in zip(names, procs, strict=True)} | {
        "viewers (this process)": time.process_time()
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(len(ordered) * q) - 1))] if ordered else float("nan")


def server_env(sc: Scenario, db: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(DJANGO_SETTINGS_MODULE="piweb.settings", PIWEB_SQLITE_PATH=db, PIWEB_LOG_LEVEL="WARNING",
               PIWEB_DEMO_DELAY=str(sc.demo_delay), PIWEB_STREAM_INTERVAL_MS=str(sc.interval_ms),
               PYTHONPATH=str(sc.tree))  # fmt: skip
    if sc.database_url:
        env["PIWEB_DATABASE_URL"] = sc.database_url
    if sc.redis:
        env["PIWEB_REDIS_URL"] = sc.redis
    return env


def in_django(env: dict[str, str], code: str) -> list[str]:
    """Runs code with the scenario's Django (env's PYTHONPATH) against its database; its printed lines."""
    code = "import django\ndjango.setup()\n" + code
    out = subprocess.run([sys.executable, "-c", code], cwd=env["PYTHONPATH"], env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return out.split()


SETUP = """
import uuid
from django.contrib.auth.models import User
from django.test import Client
from sessions_app.store import services
user = User.objects.create_user("bench-" + uuid.uuid4().hex[:12], password="x")
client = Client()
client.force_login(user)
print(client.cookies["sessionid"].value)
for i in range({n}):
    print(services.session_create(owner=user, name=f"bench {{i}}").public_id)
"""

STORED = """
from sessions_app.models import StreamingTurn
rows = StreamingTurn.objects.filter(public_id__in={ids!r})
for pk, at, entry in rows.values_list("public_id", "updated_at", "entry_id"):
    print(pk, at.timestamp(), entry or "-")
"""


def setup(sc: Scenario, env: dict[str, str]) -> tuple[list[str], str]:
    """Migrates the database and makes one user with sc.sessions sessions."""
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=sc.tree, env=env, check=True)
    cookie, *sids = in_django(env, SETUP.format(n=sc.sessions))
    return sids, cookie


def stored_at(env: dict[str, str], turn_ids: list[str]) -> dict[str, tuple[float, str]]:
    words = in_django(env, STORED.format(ids=turn_ids))
    return {words[i]: (float(words[i + 1]), words[i + 2].strip("-")) for i in range(0, len(words), 3)}


def post(port: int, sid: str, cookie: str, text: str) -> None:
    token = "b" * 32
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/sessions/{sid}/chat/send/",
        data=f"text={urllib.parse.quote(text)}".encode(),
        headers={"Cookie": f"sessionid={cookie}; csrftoken={token}", "X-CSRFToken": token, "HX-Request": "true",
                 "Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    urllib.request.urlopen(req, timeout=60).read()


async def wait_port(port: int) -> None:
    for _ in range(1200):  # the provider SDKs take seconds to import on a busy machine
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"no server on port {port}")


async def run(sc: Scenario) -> Results:
    import websockets

    res = Results()
    with tempfile.TemporaryDirectory() as tmp:
        env = server_env(sc, str(Path(tmp) / "bench.sqlite3"))
        sids, cookie = await asyncio.to_thread(setup, sc, env)
        ports = [free_port() for _ in range(sc.daphnes)]
        daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p"]
        commands = [[*daphne, str(p), "piweb.asgi:application"] for p in ports]
        commands += [[sys.executable, "manage.py", "turn_worker"]] * (sc.workers if sc.redis else 0)
        server_log = Path(tmp) / "server.log"
        with server_log.open("ab") as out:
            procs = [subprocess.Popen(c, cwd=sc.tree, env=env, stdout=out, stderr=out) for c in commands]
        try:
            for p in ports:
                try:
                    await wait_port(p)
                except RuntimeError:
                    sys.exit(f"no server on port {p}; its log:\n{server_log.read_text(errors='replace')[-3000:]}")
            measuring = False
            ends = 0
            done = asyncio.Event()
            expected_ends = sc.turns * (sc.viewers // sc.sessions)
            # Per viewer: (receive time, frame) of the frames that are not deltas, while measuring.
            others: list[list[tuple[float, str]]] = []

            async def reader(
                ws: websockets.ClientConnection, snapshot: asyncio.Event, log: list[tuple[float, str]]
            ) -> None:
                """Reads every frame from the start (an unread socket stops answering pings)."""
                nonlocal ends
                async for frame in ws:
                    now = time.time()
                    snapshot.set()
                    if not measuring:
                        continue
                    assert isinstance(frame, str)
                    m = STAMP.search(frame)
                    if m:
                        res.delivered += 1
                        res.delays.append((now - float(m.group(2))) * 1000)
                        continue
                    log.append((now, frame))
                    if TURN.search(frame):
                        ends += 1
                        if ends >= expected_ends:
                            done.set()

            async def open_one(i: int) -> tuple[websockets.ClientConnection, asyncio.Task[None]]:
                port = ports[i % len(ports)]
                headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
                url = f"ws://127.0.0.1:{port}/ws/sessions/{sids[i % len(sids)]}/"
                ws = await websockets.connect(url, additional_headers=headers, max_queue=None)
                got = asyncio.Event()
                log: list[tuple[float, str]] = []
                others.append(log)
                task = asyncio.create_task(reader(ws, got, log))
                await got.wait()  # the snapshot arrived
                return ws, task

            warm = [await open_one(i) for i in range(len(ports))]
            await asyncio.sleep(0.5)
            before = sum(rss_kb(p.pid) for p in procs[: len(ports)])
            idle_count = max(sc.idle, sc.viewers)
            opened = [await open_one(i) for i in range(idle_count)]
            await asyncio.sleep(1.0)
            after = sum(rss_kb(p.pid) for p in procs[: len(ports)])
            res.idle_kib = (after - before) / idle_count
            for ws, task in opened[sc.viewers :]:
                task.cancel()
                await ws.close()
            opened = opened[: sc.viewers]
            watchers = [(i, others[len(warm) + i]) for i in range(sc.viewers)]  # viewer i watches sids[i % n]
            await asyncio.sleep(1.0)  # presence frames settle
            measuring = True
            await asyncio.sleep(0.5)
            started = time.monotonic()
            names = [f"daphne {i + 1}" for i in range(len(ports))]
            names += [f"worker {i + 1}" for i in range(len(procs) - len(ports))]
            cpu_before = cpu_by_name(names, procs)
            sem = asyncio.Semaphore(sc.concurrent)

            async def one(i: int) -> None:
                async with sem:
                    await asyncio.to_thread(post, ports[i % len(ports)], sids[i % len(sids)], cookie,
                                            f"turn {i} " + "word " * 50)  # fmt: skip

            if sc.turns:
                await asyncio.gather(*(one(i) for i in range(sc.turns)))
                await asyncio.wait_for(done.wait(), timeout=300)
                res.elapsed = time.monotonic() - started
                now = cpu_by_name(names, procs)
                res.cpu = {n: now[n] - cpu_before[n] for n in now}
                await asyncio.sleep(0.5)  # the stored messages' frames follow the ends
            for ws, task in [*warm, *opened]:
                task.cancel()
                await ws.close()
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if sc.turns:
            turns = {m.group(1) for _, log in watchers for _, f in log if (m := TURN.search(f))}
            stored = await asyncio.to_thread(stored_at, env, sorted(turns))
            for _, log in watchers:
                for turn, (at, entry) in stored.items():
                    mine = [t for t, f in log if turn in f or (entry and entry in f)]
                    if mine:
                        res.after_stored.append((max(mine) - at) * 1000)
    return res


def report(sc: Scenario, res: Results) -> None:
    where = "redis" if sc.redis else "in-memory"
    db = "postgresql" if sc.database_url else "sqlite"
    print(f"== {sc.title}: {where} layer, {db}, {sc.daphnes} daphne, viewers={sc.viewers} over "
          f"{sc.sessions} session(s), turns={sc.turns} concurrent={sc.concurrent} interval={sc.interval_ms}ms "
          f"demo_delay={sc.demo_delay}s tree={sc.tree.name} load={os.getloadavg()[0]:.2f}")  # fmt: skip
    if sc.turns:
        print(f"   delta frames delivered: {res.delivered} in {res.elapsed:.2f}s = {res.delivered / res.elapsed:.0f}/s")
    if res.delays:
        print(f"   token-to-socket delay: median {statistics.median(res.delays):.1f} ms, "
              f"p99 {pct(res.delays, 0.99):.1f} ms, max {max(res.delays):.1f} ms")  # fmt: skip
    if res.after_stored:
        print(f"   each viewer's last frame of a turn after its reply was stored: median "
              f"{statistics.median(res.after_stored):.1f} ms, p99 {pct(res.after_stored, 0.99):.1f} ms, "
              f"max {max(res.after_stored):.1f} ms ({len(res.after_stored)} viewer-turns)")  # fmt: skip
    if res.cpu:
        print("   CPU while the turns ran (share of one core): " + ", ".join(
            f"{n} {v / res.elapsed:.0%}" for n, v in res.cpu.items()))  # fmt: skip
    print(f"   server RSS per idle websocket: {res.idle_kib:.1f} KiB (over {max(sc.idle, sc.viewers)})")


async def main(args: argparse.Namespace) -> None:
    base = Scenario(title="run", viewers=args.viewers, sessions=args.sessions, turns=args.turns,
                    concurrent=args.concurrent, interval_ms=args.interval_ms, demo_delay=args.demo_delay,
                    idle=args.idle, redis=args.redis, database_url=args.database_url, daphnes=args.daphnes,
                    workers=args.workers, tree=Path(args.tree).resolve() if args.tree else ROOT)  # fmt: skip
    if not args.scale_out:
        report(base, await run(base))
        return
    memory = replace(base, title="in-memory", redis="", database_url="", daphnes=1)
    scale = replace(base, title="scale-out", daphnes=2)
    scenarios = [memory]
    if args.baseline:
        scenarios.append(replace(memory, title="in-memory, baseline", tree=Path(args.baseline).resolve()))
    scenarios += [
        scale,
        replace(scale, title="4 sessions x 12 viewers", viewers=48, sessions=4, turns=4, concurrent=4),
        replace(scale, title="idle viewers", idle=500, turns=0),
    ]
    for sc in scenarios:
        report(sc, await run(sc))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=1, help="viewers and turns spread over this many sessions")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=10)
    parser.add_argument("--demo-delay", type=float, default=0.005)
    parser.add_argument("--idle", type=int, default=200, help="sockets opened for the memory measurement")
    parser.add_argument("--redis", default="", help="channel layer URL (turn worker processes run the turns)")
    parser.add_argument("--database-url", default="", help="e.g. postgres://postgres@127.0.0.1:5432/test")
    parser.add_argument("--daphnes", type=int, default=1, help="server processes; viewers and sends alternate")
    parser.add_argument("--workers", type=int, default=1, help="turn workers (with --redis)")
    parser.add_argument("--tree", default="", help="run the servers of another checkout (default: this one)")
    parser.add_argument("--scale-out", action="store_true", help="issue 20's scenarios, in one run")
    parser.add_argument("--baseline", default="", help="with --scale-out: an older checkout, run in-memory too")
    asyncio.run(main(parser.parse_args()))
