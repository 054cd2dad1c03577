"""Export speed and server memory: the HTML and JSONL exports of a generated 100k-entry session.

Usage: .venv/bin/python bench/bench_export.py [--db /tmp/piweb-bench-export.sqlite3] [--keep] [--entries 100000]

Generates a session (tests/generate.py --entries 100000 --branch-prob 0.05 --compactions 100
--labels 500 --seed 1, about 111 MB), imports it into a scratch SQLite database, then for each
export starts a fresh daphne (piweb as deployed, debug off) and downloads the export over HTTP as a
browser would. Prints, per export: time to the first byte of the body, total time, response size,
and the server's memory: its peak PSS while it sent the export, and that peak above the PSS it had
before the request (sampled every 20 ms from /proc/<pid>/smaps_rollup, summed over the server's
process tree), and the kernel's high-water mark of its RSS (VmHWM). Targets (issue 19): the first
byte in under 1 s; memory bounded by a batch of entries, not by the session's size.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdjango  # noqa: E402

from tests.generate import generate  # noqa: E402  (the repository's root on sys.path first)

SECRET = "bench-export-secret-key-0123456789abcdefghijklmnopqrstuvwxyz"


def tree_pids(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return pids


def pss_kb(pid: int) -> int:
    total = 0
    for p in tree_pids(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, pss_kb(self.pid))
            time.sleep(0.02)


def fetch(port: int, path: str, cookie: str) -> tuple[int, float, float, int]:
    """(status, seconds to the first body byte, total seconds, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
    response = conn.getresponse()
    first = response.read1(65536)
    ttfb = time.perf_counter() - t0
    size = len(first)
    while chunk := response.read1(1 << 20):
        size += len(chunk)
    return response.status, ttfb, time.perf_counter() - t0, size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="/tmp/piweb-bench-export.sqlite3")
    parser.add_argument("--keep", action="store_true", help="reuse the database if it exists")
    parser.add_argument("--entries", type=int, default=100_000)
    args = parser.parse_args()
    reuse = args.keep and Path(args.db).exists()
    if not reuse:
        for suffix in ("", "-wal", "-shm"):
            Path(args.db + suffix).unlink(missing_ok=True)
    os.environ.update(PIWEB_SQLITE_PATH=args.db, PIWEB_SECRET_KEY=SECRET, DJANGO_SETTINGS_MODULE="piweb.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from sessions_app.models import Session
    from sessions_app.store.importing import pipeline

    call_command("migrate", verbosity=0)
    user, _ = User.objects.get_or_create(username="bench-export")
    session = Session.objects.filter(owner=user).order_by("-last_seq").first()
    if session is None:
        data = generate(entries=args.entries, branch_prob=0.05, compactions=100, labels=500, seed=1)
        t0 = time.perf_counter()
        session = pipeline.session_import(owner=user, data=data).session
        print(f"imported {len(data) / 1e6:.0f} MB, {session.last_seq:,} entries in {time.perf_counter() - t0:.1f} s")
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_")}
    env.update(
        PIWEB_SQLITE_PATH=args.db, PIWEB_SECRET_KEY=SECRET, PIWEB_DEBUG="false", PIWEB_ALLOWED_HOSTS="127.0.0.1",
        PIWEB_JANITOR="0", PIWEB_LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="piweb.settings",
    )  # fmt: skip
    print(f"session: {session.last_seq:,} entries")
    print(f"{'export':<8}{'status':>7}{'first byte':>12}{'total':>9}{'size':>10}{'PSS before':>12}{'peak PSS':>10}"
          f"{'growth':>9}{'VmHWM':>9}")  # fmt: skip
    for name in ("jsonl", "html"):
        with benchdjango.daphne(ROOT, env) as (port, pid):
            fetch(port, f"/sessions/{session.public_id}/", cookie)  # warm: imports, templates, connection
            before = pss_kb(pid)
            sampler = Sampler(pid)
            sampler.start()
            status, ttfb, total, size = fetch(port, f"/sessions/{session.public_id}/export.{name}", cookie)
            sampler.stop.set()
            sampler.join()
            print(f"{name:<8}{status:>7}{ttfb * 1000:>10.0f}ms{total:>8.1f}s{size / 1e6:>8.1f}MB"
                  f"{before / 1024:>10.0f}MB{sampler.peak / 1024:>8.0f}MB{(sampler.peak - before) / 1024:>7.0f}MB"
                  f"{hwm_kb(pid) / 1024:>7.0f}MB")  # fmt: skip


if __name__ == "__main__":
    main()
