"""What each process-wide side effect piweb keeps buys, measured with it and without it.

    .venv/bin/python bench/bench_side_effects.py --file F [--runs 5] [--appends 1000]

  gc pause         store/importing/bulkwrite.py: the cyclic GC held off while an import writes
                   rows; a 100k import with it and without it (bulkwrite.gc_paused made a no-op)
  sqlite adapters  bulkwrite.sqlite_binding: identity sqlite3 adapters for None, bytes and
                   memoryview while an import writes rows; the same import with and without them
  WAL watcher      store/checkpoint.py: a thread per database file checkpoints the WAL;
                   appends' median and p99 with it (PIWEB_WAL_CHECKPOINT_MS=250) and without (0)
  daphne patch     piweb/uploads.py: Twisted's multipart parsing switched off for daphne's
                   requests; the file POSTed to /api/sessions/import with it and without it

Each measurement runs in a fresh interpreter on a fresh SQLite database; on and off alternate
(the machine's speed drifts), and the medians are printed with their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = r"""
import json, os, sys, time
sys.path.insert(0, os.environ["ROOT"])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
user = User.objects.create_user("bench")
"""

IMPORT = r"""
import contextlib
from sessions_app.store.importing import bulkwrite, pipeline
if os.environ["EFFECT"] == "gc pause" and os.environ["STATE"] == "off":
    bulkwrite.gc_paused = contextlib.nullcontext
if os.environ["EFFECT"] == "sqlite adapters" and os.environ["STATE"] == "off":
    bulkwrite.sqlite_binding = contextlib.nullcontext
data = open(sys.argv[1], "rb").read()
t0 = time.perf_counter()
pipeline.session_import(owner=user, data=data)
print(json.dumps({"ms": (time.perf_counter() - t0) * 1000}))
"""

APPENDS = r"""
from sessions_app.store import services
session = services.session_create(owner=user)
times = []
for i in range(int(sys.argv[1])):
    payload = {"type": "message", "message": {"role": "user", "content": "x" * (200 + i % 800), "timestamp": i}}
    t0 = time.perf_counter()
    services.entry_append(session=session, payload=payload)
    times.append((time.perf_counter() - t0) * 1000)
times.sort()
print(json.dumps({"median": times[len(times) // 2], "p99": times[int(len(times) * 0.99)]}))
"""

# daphne with piweb's switch (piweb.asgi installs it) or without: marked as installed beforehand.
DAPHNE = r"""
import os, sys
if os.environ["STATE"] == "off":
    from daphne.http_protocol import WebRequest
    WebRequest._piweb_form_parsing_off = True
from daphne.cli import CommandLineInterface
CommandLineInterface().run(sys.argv[1:])
"""


def child(code: str, env: dict[str, str], *args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def upload_ms(env: dict[str, str], file: Path) -> float:
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
    make_user = "from django.contrib.auth.models import User; User.objects.create_user('b')"
    subprocess.run([*manage, "shell", "-v0", "-c", make_user], env=env, check=True)
    token = subprocess.run([*manage, "create_api_token", "b"], env=env, check=True, capture_output=True, text=True)
    bearer = token.stdout.strip().splitlines()[-1]
    port = 18500 + os.getpid() % 400
    server = subprocess.Popen([sys.executable, "-c", DAPHNE, "-p", str(port), "piweb.asgi:application"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)  # fmt: skip
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="s.jsonl"\r\n\r\n'
        body = head + file.read_bytes() + b"\r\n--b--\r\n"
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/sessions/import", data=body, method="POST",
            headers={"Authorization": f"Bearer {bearer}", "Content-Type": "multipart/form-data; boundary=b"},
        )  # fmt: skip
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=900) as response:
            response.read()
        return (time.perf_counter() - t0) * 1000
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", type=Path, required=True, help="a large pi session file (e.g. 100k entries)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--appends", type=int, default=1000)
    ap.add_argument("--only", help="one effect: 'gc pause', 'sqlite adapters', 'WAL watcher' or 'daphne patch'")
    args = ap.parse_args()
    effects = ["gc pause", "sqlite adapters", "WAL watcher", "daphne patch"]
    for effect in [args.only] if args.only else effects:
        figures: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
        with tempfile.TemporaryDirectory() as tmp:
            for run in range(args.runs):
                for state in ("on", "off") if run % 2 == 0 else ("off", "on"):
                    db = Path(tmp) / f"{run}-{state}.sqlite3"
                    env = {**os.environ, "ROOT": str(ROOT), "PIWEB_SQLITE_PATH": str(db), "EFFECT": effect,
                           "STATE": state, "PYTHONPATH": str(ROOT)}  # fmt: skip
                    if effect == "WAL watcher":
                        env["PIWEB_WAL_CHECKPOINT_MS"] = "250" if state == "on" else "0"
                        figures[state].append(child(SETUP + APPENDS, env, str(args.appends)))
                    elif effect == "daphne patch":
                        figures[state].append({"ms": upload_ms(env, args.file.resolve())})
                    else:
                        figures[state].append(child(SETUP + IMPORT, env, str(args.file.resolve())))
                    print(f"{effect:16} run {run + 1} {state:3}: {figures[state][-1]}", flush=True)
        for key in figures["on"][0]:
            on = statistics.median(f[key] for f in figures["on"])
            off = statistics.median(f[key] for f in figures["off"])
            print(f"== {effect} {key}: on {on:,.2f} ms, off {off:,.2f} ms (off/on {off / on:.3f})", flush=True)


if __name__ == "__main__":
    main()
