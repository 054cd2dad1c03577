"""Other writers during a big import, and the server's memory for it.

    .venv/bin/python bench/bench_import_writers.py [--file F] [--entries 100000]
        [--repeated-mb 1024] [--interval 0.1] [--database-url postgres://...] [--redis redis://...]

Starts daphne (PIWEB_DEBUG=false) on a fresh SQLite file (or the given PostgreSQL database) and
uploads a pi session file to POST /api/sessions/import as one user (default: pi's 100k-entry
session made by tests/generate.py into /tmp, ~111 MB), streamed from disk, while another user
appends an entry to a session of their own every --interval seconds through the REST API. It
prints the import's status and time, the appends' failures and waits (p50, p99, max), and the
server's peak memory above its level before the upload: the summed PSS of daphne's process tree
(/proc/<pid>/smaps_rollup, the import's worker child included), sampled every 20 ms. Then the same
for a file of one header line repeated to --repeated-mb MB (made in /tmp, not kept; 0: skip).
"""

from __future__ import annotations

import argparse
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
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def configure(db_path: Path, database_url: str | None, redis_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(
        DJANGO_SETTINGS_MODULE="piweb.settings",
        PIWEB_DEBUG="false",
        PIWEB_SECRET_KEY="bench-import-writers-secret-key-0123456789",
        PIWEB_ALLOWED_HOSTS="127.0.0.1",
        PIWEB_SQLITE_PATH=str(db_path),
        PIWEB_LOG_LEVEL="ERROR",
        PIWEB_JANITOR="0",
        PYTHONUNBUFFERED="1",
    )
    if database_url:
        env["PIWEB_DATABASE_URL"] = database_url
    if redis_url:
        env["PIWEB_REDIS_URL"] = redis_url
        env["PIWEB_CACHE_URL"] = redis_url.rsplit("/", 1)[0] + "/1"
    os.environ.update({k: v for k, v in env.items() if k.startswith(("PIWEB_", "DJANGO_"))})
    return env


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


# --- memory of the server's process tree --------------------------------------------------------


def tree(pid: int) -> list[int]:
    """pid and its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def pss_kib(pid: int) -> int:
    total = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


class Sampler:
    """The peak of pss_kib(pid) while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, pss_kib(self.pid))
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


# --- requests -----------------------------------------------------------------------------------


def upload(url: str, path: Path, token: str) -> tuple[int, str, float]:
    """POST the file as multipart/form-data, streamed from disk."""
    boundary = "piwebbench0123456789"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    size = len(head) + path.stat().st_size + len(tail)

    def body() -> Iterator[bytes]:
        yield head
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                yield chunk
        yield tail

    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(size),
    }
    request = urllib.request.Request(url, data=body(), headers=headers, method="POST")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=1800) as response:
            return response.status, response.read().decode()[:300], time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")[:300], time.perf_counter() - started


def post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, str, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, "", time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")[:300], time.perf_counter() - started
    except OSError as exc:
        return 0, repr(exc), time.perf_counter() - started


def run_one(base: str, pid: int, path: Path, tokens: dict[str, str], session_id: str, interval: float) -> None:
    """One import while the other user appends; prints its figures."""
    waits: list[float] = []
    failures: list[tuple[int, str]] = []
    stop = threading.Event()

    def append() -> None:
        n = 0
        while not stop.is_set():
            body = json.dumps({"type": "custom", "customType": "bench", "data": {"n": n}}).encode()
            headers = {"Authorization": f"Bearer {tokens['appender']}", "Content-Type": "application/json"}
            status, text, waited = post(f"{base}/api/sessions/{session_id}/entries", body, headers)
            waits.append(waited)
            if status != 201:
                failures.append((status, text))
            n += 1
            time.sleep(max(0.0, interval - waited))

    urllib.request.urlopen(base + "/healthz", timeout=5).read()
    time.sleep(1)
    baseline = pss_kib(pid)
    appender = threading.Thread(target=append)
    appender.start()
    time.sleep(3)  # appends before the upload starts: the machine's own figures
    before = list(waits)
    with Sampler(pid) as sampler:
        status, text, seconds = upload(f"{base}/api/sessions/import", path, tokens["importer"])
        time.sleep(1)
    stop.set()
    appender.join()
    during = waits[len(before) :]
    size_mb = path.stat().st_size / 1e6
    print(f"{path.name} ({size_mb:.0f} MB): import {status} in {seconds:.1f} s {text[:160]!r}")
    print(
        f"  server peak PSS above baseline: {(sampler.peak - baseline) / 1024:.0f} MB"
        f" (baseline {baseline / 1024:.0f} MB, peak {sampler.peak / 1024:.0f} MB)"
    )
    for label, values in (("before the upload", before), ("during the upload", during)):
        p50, p99, top = (statistics.median(values) * 1000, pct(values, 0.99) * 1000, max(values) * 1000)
        print(f"  other user's appends {label}: {len(values)}, wait p50 {p50:.0f} ms,", end="")
        print(f" p99 {p99:.0f} ms, max {top:.0f} ms")
    print(f"  append failures: {len(failures)}")
    for status, text in failures[:5]:
        print(f"    append failed: {status} {text[:200]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", type=Path, help="the file to import (default: a generated session)")
    ap.add_argument("--entries", type=int, default=100_000, help="entries of the generated session")
    ap.add_argument("--repeated-mb", type=int, default=1024, help="size of the repeated-lines file; 0: skip")
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between the other user's appends")
    ap.add_argument("--database-url")
    ap.add_argument("--redis")
    args = ap.parse_args()

    path = args.file
    if path is None:
        path = Path(tempfile.gettempdir()) / f"piweb-iw-{args.entries}.jsonl"
        if not path.exists():
            from tests.generate import generate

            path.write_bytes(generate(args.entries, 1))
    with tempfile.TemporaryDirectory() as tmp:
        env = configure(Path(tmp) / "bench.sqlite3", args.database_url, args.redis)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        import django

        django.setup()
        from django.contrib.auth.models import User

        from sessions_app.access.api_tokens import api_token_create
        from sessions_app.models import Session
        from sessions_app.store import services

        for session in Session.objects.filter(owner__username__startswith="benchiw-"):
            services.session_delete(session=session)
        User.objects.filter(username__startswith="benchiw-").delete()
        importer, appender = User.objects.create_user("benchiw-importer"), User.objects.create_user("benchiw-appender")
        tokens = {
            "importer": api_token_create(user=importer, name="bench")[1],
            "appender": api_token_create(user=appender, name="bench")[1],
        }
        target = services.session_create(owner=appender, name="appends during an import")
        port = 18800 + os.getpid() % 90
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"]
        log = Path(tmp) / "server.log"
        with log.open("ab") as out:
            server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        repeated = Path(tempfile.gettempdir()) / f"piweb-iw-repeated-{args.repeated_mb}mb.jsonl"
        try:
            print(f"database: {'postgresql' if args.database_url else 'sqlite'}")
            run_one(base, server.pid, path, tokens, target.public_id, args.interval)
            if args.repeated_mb:
                line = json.dumps(
                    {"type": "session", "version": 3, "id": "bench-repeated", "timestamp": "2026-01-01T00:00:00.000Z",
                     "cwd": "/home/u/bench"}, separators=(",", ":"),
                ).encode() + b"\n"  # fmt: skip
                with repeated.open("wb") as f:
                    block = line * ((1 << 20) // len(line))
                    for _ in range(args.repeated_mb):
                        f.write(block)
                run_one(base, server.pid, repeated, tokens, target.public_id, args.interval)
        finally:
            server.terminate()
            server.wait(timeout=30)
            repeated.unlink(missing_ok=True)
            for session in Session.objects.filter(owner__username__startswith="benchiw-"):
                services.session_delete(session=session)
        errors = [ln for ln in log.read_text(errors="replace").splitlines() if "Error" in ln or "locked" in ln]
        print(f"server log lines with errors: {len(errors)}")
        for ln in errors[:10]:
            print("  " + ln[:200])


if __name__ == "__main__":
    main()
