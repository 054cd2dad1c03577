"""GET /api/sessions/{id}/usage on a generated 100k-entry branched session: cold and warm.

    nice -n -10 .venv/bin/python bench/bench_usage.py [--entries 100000] [--cache-url redis://127.0.0.1:6379/11]

The file is tests/generate.py's (seed 1, 5% branching, 1 compaction per 1,000 entries, 1 label per
200), imported into a fresh SQLite database under bench/out/usage/. Timed, each the median of
several runs:

  usage cold      store.usage_facts.usage with the cache emptied first (a new server process):
                  every chunk's rows read and the assistant lines parsed
  usage warm      the same with every chunk cached
  usage API warm  GET /api/sessions/{id}/usage through Django's test client (routing, permission
                  check and JSON included)
  after append    the API right after a new entry (only the last chunk read again)

The cache is the settings' default (process memory) unless --cache-url names a Redis database
(then its chunks are pickled over the network, as between deployed server processes; the
database is emptied). The figures are checked against a pass over the file itself (leaves, total).
Beside pi (installed in var/pi, tests/oracle/install.py): its getSessionStats-style sum over the
entries and getTree(), both in memory on the already opened file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "usage"
sys.path.insert(0, str(ROOT))

from tests.generate import generate  # noqa: E402


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), times


def expected(lines: list[dict[str, Any]]) -> tuple[int, float]:
    """(leaves, total cost) straight from the file."""
    parents = {e.get("parentId") for e in lines}
    leaves = sum(1 for e in lines if e["id"] not in parents)
    cost = 0.0
    for e in lines:
        m = e.get("message") if e.get("type") == "message" else None
        if m and m.get("role") == "assistant":
            cost += ((m.get("usage") or {}).get("cost") or {}).get("total", 0)
    return leaves, cost


# pi has no per-branch usage; its AgentSession.getSessionStats() sums usage over the session's
# entries (every assistant message once). Timed as that sum over getEntries(), and getTree() (the walk
# a per-branch figure needs at least), on the opened file, in a node process of its own.
PI_JS = """
const { SessionManager } = await import("@mariozechner/pi-coding-agent");
import { mkdtempSync, copyFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const [file, runs] = [process.argv[1], Number(process.argv[2])];
const dir = mkdtempSync(join(tmpdir(), "pi-usage-"));
const work = join(dir, "session.jsonl");
copyFileSync(file, work);
const sm = SessionManager.open(work, dir);
const stats = () => {
  let cost = 0, tokens = 0;
  for (const e of sm.getEntries()) {
    if (e.type === "message" && e.message.role === "assistant") {
      cost += e.message.usage.cost.total; tokens += e.message.usage.totalTokens ?? 0;
    }
  }
  return cost + tokens;
};
const time = (fn) => {
  fn();
  const ts = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ts.sort((a, b) => a - b);
  return ts[(runs - 1) >> 1];
};
console.log(JSON.stringify({ stats: time(stats), getTree: time(() => sm.getTree()) }));
rmSync(dir, { recursive: true, force: true });
"""


def pi_ms(path: Path, runs: int) -> dict[str, float] | None:
    """pi's getSessionStats-style sum and getTree() medians, if pi is installed (var/pi)."""
    pi_dir = Path(os.environ.get("PIWEB_PI_DIR", ROOT / "var" / "pi"))
    if not (pi_dir / "node_modules").exists():
        return None
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", PI_JS, str(path.resolve()), str(runs)],
        cwd=pi_dir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"pi failed: {proc.stderr[-500:]}", file=sys.stderr)
        return None
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--cache-url", default="")
    parser.add_argument("--no-pi", action="store_true")
    args = parser.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"gen-{args.entries}-b05-seed1.jsonl"
    if not path.exists():
        n = args.entries
        path.write_bytes(generate(n, 1, branch_prob=0.05, compactions=max(1, n // 1000), labels=max(1, n // 200)))
    db = OUT / "bench.sqlite3"
    for leftover in OUT.glob("bench.sqlite3*"):
        leftover.unlink()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="piweb.settings", PIWEB_SQLITE_PATH=str(db), PIWEB_DEBUG="false",
        PIWEB_LOG_LEVEL="WARNING",
    )  # fmt: skip
    os.environ.setdefault("PIWEB_SECRET_KEY", "piweb-bench-only-secret-key-not-for-production")
    os.environ.pop("PIWEB_DATABASE_URL", None)
    if args.cache_url:
        os.environ["PIWEB_CACHE_URL"] = args.cache_url
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.cache import caches
    from django.core.management import call_command
    from django.test import Client

    from sessions_app.store import services, usage_facts
    from sessions_app.store.importing import pipeline

    call_command("migrate", verbosity=0)
    user = User.objects.create(username="bench")
    t0 = time.perf_counter()
    session = pipeline.session_import(owner=user, data=path.read_bytes(), source_path=str(path)).session
    import_ms = (time.perf_counter() - t0) * 1000
    lines = [json.loads(raw) for raw in path.read_bytes().decode().splitlines()[1:]]
    leaves, cost = expected(lines)
    cache = caches["default"]

    def cold() -> Any:
        cache.clear()
        return usage_facts.usage(session=session)

    found = cold()
    assert len(found.branches) == leaves, (len(found.branches), leaves)
    assert abs(found.total.cost - cost) < 1e-6 * max(1.0, cost), (found.total.cost, cost)
    assert abs(session.cost - cost) < 1e-6 * max(1.0, cost), (session.cost, cost)
    client = Client()
    client.force_login(user)
    url = f"/api/sessions/{session.public_id}/usage"

    def api() -> bytes:
        response = client.get(url)
        assert response.status_code == 200
        return bytes(response.content)

    rows: list[tuple[str, float, list[float]]] = []
    rows.append(("usage cold (cache emptied)", *median_ms(cold, args.runs)))
    usage_facts.usage(session=session)
    rows.append(("usage warm", *median_ms(lambda: usage_facts.usage(session=session), args.runs)))
    api()
    rows.append(("usage API warm", *median_ms(api, args.runs)))
    note = {"type": "custom", "customType": "bench", "data": {}}

    def after_append() -> float:
        services.entry_append(session=session, payload=note, author=user)
        t0 = time.perf_counter()
        api()
        return (time.perf_counter() - t0) * 1000

    appended = [after_append() for _ in range(args.runs)]
    rows.append(("usage API after an append", statistics.median(appended), appended))
    pi = None if args.no_pi else pi_ms(path, args.runs)

    print(f"file: {path.name}: {len(lines):,} entries, {leaves:,} leaves, total cost ${cost:,.2f}")
    print(f"cache: {args.cache_url or 'process memory (locmem)'}; import took {import_ms:,.0f} ms")
    print(f"body: {len(api()):,} bytes")
    for name, med, times in rows:
        verdict = "PASS" if med < 200 else "FAIL"
        print(f"{name:32} median {med:8.1f} ms  (min {min(times):.1f}, max {max(times):.1f}, n={len(times)})  "
              f"target <200 ms: {verdict}")  # fmt: skip
    if pi is None:
        print("pi: not run")
    else:
        print(f"{'pi getSessionStats-style total':32} median {pi['stats']:8.1f} ms  (in memory, file already open)")
        print(f"{'pi getTree()':32} median {pi['getTree']:8.1f} ms  (in memory)")


if __name__ == "__main__":
    main()
