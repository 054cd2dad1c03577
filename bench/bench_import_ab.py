"""Import speed of two versions of piweb, in alternating runs (the machine's speed drifts).

    .venv/bin/python bench/bench_import_ab.py --code OLD_CHECKOUT --code . --file F [--runs 5] [--api]

Each run imports the file once into a fresh SQLite database, in a fresh interpreter that runs the
given checkout's code: as a service call (the import service), or with --api as an upload to
POST /api/sessions/import on a daphne started for it (upload and multipart parsing included). It
prints every run and each version's median, and the ratio of the medians. A service call's run
also shows the forked worker's CPU time and page faults (its process builds the rows: the import
waits for it).
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
from pathlib import Path

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.environ["CODE"])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
user = User.objects.create_user("bench")
# Chosen by the checkout's files, not by trying an import: with piweb installed editable, a module
# missing from an older checkout would be found in the installed one.
if os.path.exists(os.path.join(os.environ["CODE"], "sessions_app", "store", "importing", "pipeline.py")):
    from sessions_app.store.importing.pipeline import session_import
else:  # before the pipeline had a module of its own
    from sessions_app.services import session_import
data = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.perf_counter()
result = session_import(owner=user, data=data)
ms = (time.perf_counter() - t0) * 1000
after = resource.getrusage(resource.RUSAGE_CHILDREN)
worker_ms = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
faults = after.ru_minflt - before.ru_minflt
print(json.dumps({"ms": ms, "added": result.added, "worker_ms": worker_ms, "faults": faults}))
"""


def run_service(code: Path, file: Path, db: Path) -> tuple[float, str]:
    """The import's time (ms), and what its worker took."""
    env = {**os.environ, "CODE": str(code), "PIWEB_SQLITE_PATH": str(db), "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(file)], env=env, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return float(found["ms"]), f"worker: {found['worker_ms']:,.0f} ms CPU, {found['faults']:,} page faults"


def run_api(code: Path, file: Path, db: Path) -> tuple[float, str]:
    import urllib.request

    env = {**os.environ, "CODE": str(code), "PIWEB_SQLITE_PATH": str(db), "PYTHONPATH": str(code)}
    manage = [sys.executable, str(code / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=code)
    subprocess.run(
        [*manage, "shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('bench')"],
        env=env, check=True, cwd=code,
    )  # fmt: skip
    token = subprocess.run(
        [*manage, "create_api_token", "bench"], env=env, check=True, cwd=code, capture_output=True, text=True
    )
    bearer = token.stdout.strip().splitlines()[-1]
    port = 18000 + os.getpid() % 1000
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-p", str(port), "piweb.asgi:application"], env=env, cwd=code,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        boundary = "piwebbench"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.jsonl"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + file.read_bytes()
            + f"\r\n--{boundary}--\r\n".encode()
        )
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/sessions/import", data=body, method="POST",
            headers={"Authorization": f"Bearer {bearer}", "Content-Type": f"multipart/form-data; boundary={boundary}"},
        )  # fmt: skip
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
        return (time.perf_counter() - t0) * 1000, "upload"
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", type=Path, action="append", required=True, help="a checkout (give two)")
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--api", action="store_true")
    args = ap.parse_args()
    codes = [c.resolve() for c in args.code]
    times: dict[Path, list[float]] = {c: [] for c in codes}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for code in codes if run % 2 == 0 else reversed(codes):
                db = Path(tmp) / f"run-{run}-{codes.index(code)}.sqlite3"
                ms, detail = (run_api if args.api else run_service)(code, args.file.resolve(), db)
                times[code].append(ms)
                print(f"run {run + 1} {code}: {ms:,.0f} ms ({detail})", flush=True)
                for suffix in ("", "-wal", "-shm"):
                    Path(str(db) + suffix).unlink(missing_ok=True)
    medians = {c: statistics.median(t) for c, t in times.items()}
    for code, median in medians.items():
        print(f"median {code}: {median:,.0f} ms  (runs: {', '.join(f'{t:,.0f}' for t in times[code])})")
    first, second = codes
    print(f"ratio {second.name or second} / {first.name or first}: {medians[second] / medians[first]:.3f}")


if __name__ == "__main__":
    main()
