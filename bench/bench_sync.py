"""What `piweb sync` costs, against a real daphne on a fresh SQLite database.

    .venv/bin/python bench/bench_sync.py [--entries 100000] [--appends 30]

1. First push vs plain import: a generated file of --entries entries is imported through the
   REST API (POST /api/sessions/import, one user), then pushed by `piweb sync` (the CLI as its own
   process, another user); prints both times and their ratio (target: push <= 1.5x import).
2. --watch latency: `piweb sync --watch` follows a session while a second browser (a websocket on
   the session page's channel) watches it; one line is appended at a time and timed until the
   browser's tree gets the frame for it. Prints p50 and max (target: p50 < 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DB = OUT / "sync.sqlite3"
sys.path.insert(0, str(ROOT))

import benchdjango  # noqa: E402  (bench/, the script's folder)


def _pi_file(root: Path, data: bytes) -> Path:
    header = json.loads(data.split(b"\n", 1)[0])
    folder = root / "--bench--"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"
    path.write_bytes(data)
    return path


def _cli_env(base: str, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIWEB_", "DJANGO_"))}
    env.update(PYTHONPATH=str(ROOT), PIWEB_SERVER=base, PIWEB_TOKEN=token)
    return env


def bench_first_push(base: str, entries: int) -> dict[str, Any]:
    from django.contrib.auth.models import User

    from piweb.cli import config
    from piweb.cli.http import Client
    from sessions_app.access.api_tokens import api_token_create
    from tests.generate import generate

    data = generate(entries, seed=99, branch_prob=0.02, compactions=5, labels=20)
    importer = User.objects.create_user("importer")
    pusher = User.objects.create_user("pusher")
    started = time.perf_counter()
    Client(config.Remote(base, api_token_create(user=importer)[1])).post_file("/api/sessions/import", data, {})
    imported = time.perf_counter() - started
    path = _pi_file(OUT / "push", data)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "piweb.cli", "sync", str(path)], check=True, capture_output=True,
        env=_cli_env(base, api_token_create(user=pusher, scope="push")[1]),
    )  # fmt: skip
    pushed = time.perf_counter() - started
    return {"entries": entries, "bytes": len(data), "import_s": imported, "push_s": pushed, "ratio": pushed / imported}


async def _latencies(base: str, sid: str, cookie: str, path: Path, lines: list[bytes]) -> list[float]:
    import websockets

    took = []
    async with websockets.connect(
        base.replace("http://", "ws://") + f"/ws/sessions/{sid}/",
        additional_headers={"Cookie": f"sessionid={cookie}", "Origin": base},
    ) as ws:
        await asyncio.wait_for(ws.recv(), 10)  # the snapshot
        for line in lines:
            entry_id = json.loads(line)["id"]
            while True:  # drain what came before
                try:
                    await asyncio.wait_for(ws.recv(), 0.05)
                except TimeoutError:
                    break
            started = time.perf_counter()
            with path.open("ab") as f:
                f.write(line)
            while True:
                frame = await asyncio.wait_for(ws.recv(), 10)
                if isinstance(frame, str) and entry_id in frame:
                    break
            took.append(time.perf_counter() - started)
            await asyncio.sleep(0.1)
    return took


def bench_watch(base: str, appends: int) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.test import Client as DjangoClient

    from sessions_app.access.api_tokens import api_token_create
    from tests.generate import generate

    user = User.objects.create_user("watcher")
    data = generate(40 + appends, seed=98)
    lines = data.splitlines(keepends=True)
    path = _pi_file(OUT / "watch", b"".join(lines[:40]))
    env = _cli_env(base, api_token_create(user=user, scope="push")[1])
    subprocess.run([sys.executable, "-m", "piweb.cli", "sync", str(path)], check=True, capture_output=True, env=env)
    watcher = subprocess.Popen([sys.executable, "-m", "piweb.cli", "sync", "--watch", str(path.parent)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(1.0)
        browser = DjangoClient()
        browser.force_login(user)
        sid = json.loads(lines[0])["id"]
        took = asyncio.run(_latencies(base, sid, browser.cookies["sessionid"].value, path, lines[40:]))
    finally:
        watcher.terminate()
        watcher.wait()
    return {"appends": len(took), "p50_s": statistics.median(took), "max_s": max(took)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--appends", type=int, default=30)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PIWEB_LOG_LEVEL", "WARNING")
    benchdjango.setup(str(DB))
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(
        PIWEB_SQLITE_PATH=str(DB), PIWEB_DEBUG="false", PIWEB_SECRET_KEY=str(settings.SECRET_KEY),
        PIWEB_ALLOWED_HOSTS="127.0.0.1", PIWEB_JANITOR="0", PIWEB_LOG_LEVEL="WARNING",
    )  # fmt: skip
    with benchdjango.daphne(ROOT, env, OUT / "sync-daphne.log") as (port, _):
        base = f"http://127.0.0.1:{port}"
        push = bench_first_push(base, args.entries)
        print(
            f"first push of {push['entries']} entries ({push['bytes'] / 1e6:.1f} MB): import {push['import_s']:.2f} s, "
            f"piweb sync {push['push_s']:.2f} s, ratio {push['ratio']:.2f} (target <= 1.5)"
        )
        watch = bench_watch(base, args.appends)
        print(
            f"--watch append -> second browser's tree, {watch['appends']} appends: p50 {watch['p50_s'] * 1000:.0f} ms, "
            f"max {watch['max_s'] * 1000:.0f} ms (target p50 < 1000 ms)"
        )


if __name__ == "__main__":
    main()
