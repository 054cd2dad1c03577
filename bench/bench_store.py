"""piweb's session store beside the real pi, on the same files, in one run.

    .venv/bin/python bench/bench_store.py [--sizes 1k,10k,100k] [--quick] [--database-url URL]

For each file (generated with tests/generate.py into bench/out/, plus pi's own
tests/fixtures/pi/large-session.jsonl) this times the real pi (bench/pi_timings.mjs, on the published
npm SessionManager) and then the same operations through piweb's services and selectors:

  import          pipeline.session_import of the whole file, in a fresh subprocess (peak RSS
                  measured there); beside pi's SessionManager.open(), timed as pi_timings.mjs
                  times it in a node process run just before each import (the machine's speed drifts)
  import via API  the file POSTed to /api/sessions/import on a daphne started for it (upload and
                  multipart parsing included); for information
  context@leaf    selectors.session_context at the session's leaf (decoded, as chat turns read it), and
                  session_context_json (what the API serves), beside pi's buildSessionContext(); then
                  GET /api/sessions/{id}/context from a daphne, end to end (the issue's target)
  branch+context  100 seeded targets (branch_targets()), the same for both: services.leaf_move +
                  selectors.session_context per target; beside pi's branch() + buildSessionContext()
  tree            GET /api/sessions/{id}/tree (tree_nodes' chunk cache warm; right after an append;
                  right after a label on an older entry) and selectors.tree_json with the cache
                  emptied first (a new server process); beside getTree()
  append          1000 x services.entry_append of append_messages(); beside pi's appendMessage() of
                  the same messages

It prints one table (piweb and pi figures, piweb/pi ratio, target, PASS/FAIL) and writes every
figure to bench/out/results.json. Targets are the issue's; they are judged (PASS/FAIL) on the files
of the size they name (100k entries), and shown as "(pass)"/"(fail)" for information on the others.

Files: 5%-branching files of each --sizes with 1 compaction per 1,000 entries, a linear one
(--branch-prob 0) of the largest size with 1 per 10,000 (its leaf context is large), 1 label per
200, seed 1 (one seed gives one session id: each file's session replaces the previous one in the
database). The output ends with each file's shape (entries, compactions, the leaf's context).

The database is a fresh SQLite file under bench/out/ unless --database-url is given (then the
benchmark's sessions left by an earlier run are deleted first; nothing else is touched). The app is
run from a copy made at the start (bench/out/code/), so edits to the working tree during a run
cannot mix two versions; --no-snapshot runs it in place. Peak RSS is the import process's VmHWM
plus the memory of its own (private pages) that the forked import worker has at its end.
pi is the install the oracle tests use (tests/oracle/install.py): tests/oracle/pi/ `npm ci`ed into
var/pi/ when it is missing or its lock file changed, or the folder PIWEB_PI_DIR names.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after the app's snapshot (configure_django puts it first)

import benchdjango  # noqa: E402

from tests.generate import generate  # noqa: E402
from tests.oracle.install import install, placed  # noqa: E402
from tests.paths import LARGE_SESSION  # noqa: E402

OUT = ROOT / "bench" / "out"
PI_TIMINGS = ROOT / "bench" / "pi_timings.mjs"
FIXTURE = LARGE_SESSION
BIG = 100_000  # the size the targets are set for
BENCH_USER = "bench"
CODE_DIRS = ("piweb", "sessions_app", "templates", "static")  # what Django needs to run the app


# --- small helpers ---------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def r3(x: float) -> float:
    return round(x, 3)


def stats(ts: list[float]) -> dict[str, Any]:
    """median / p90 / p99 / min / max in ms; quantiles picked as pi_timings.mjs picks them."""
    s = sorted(ts)
    n = len(s)

    def q(p: float) -> float:
        return s[min(n - 1, int(p * n))]

    return {
        "median_ms": r3(statistics.median(s)),
        "p90_ms": r3(q(0.9)),
        "p99_ms": r3(q(0.99)),
        "min_ms": r3(s[0]),
        "max_ms": r3(s[-1]),
        "n": n,
    }


def measure(fn: Callable[[], Any], *, min_n: int, max_n: int = 51, budget_s: float = 3.0) -> dict[str, Any]:
    """Run fn once to warm up, then at least min_n times and until max_n runs or budget_s is spent."""
    fn()
    gc.collect()
    ts: list[float] = []
    total = 0.0
    while len(ts) < min_n or (len(ts) < max_n and total < budget_s):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        ts.append(dt * 1000)
        total += dt
    return stats(ts)


def parse_size(text: str) -> int:
    t = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def header_id(path: Path) -> str:
    with path.open("rb") as f:
        return str(json.loads(f.readline())["id"])


def git_state() -> str:
    """HEAD, and which files under sessions_app/ differ from it (the core is benched as it is on disk)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "sessions_app", "piweb"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return "?"
    changed = [line[3:] for line in dirty.stdout.splitlines()]
    return head.stdout.strip() + (f" + uncommitted: {', '.join(changed)}" if changed else "")


# --- pi and the files ----------------------------------------------------------------------------


def branch_targets(entries: int, count: int, seed: int = 42) -> list[int]:
    """The entries (indices in file order) that pi and piweb both branch to."""
    rng = random.Random(seed)
    return [rng.randrange(entries) for _ in range(count)]


def generated_file(n: int, *, linear: bool, seed: int) -> Path:
    """tests/generate.py output, made once: 5% branching with 1 compaction per 1,000 entries, or one
    linear chain with 1 per 10,000 (so that its leaf context is large: about 9,300 messages at 100k,
    as the issue's 7,583); 1 label per 200 entries. The header id depends on
    the seed only, so files of one seed are one session to piweb: each file's import replaces the
    previous file's session."""
    compactions = max(1, n // (10_000 if linear else 1000))
    kind = f"linear-c{compactions}" if linear else "b05"
    path = OUT / f"gen-{size_label(n)}-{kind}-seed{seed}.jsonl"
    if not path.exists():
        log(f"generating {path.name}")
        tmp = path.with_suffix(".tmp")
        options = {"branch_prob": 0.0 if linear else 0.05, "compactions": compactions, "labels": max(1, n // 200)}
        tmp.write_bytes(generate(n, seed, **options))
        tmp.rename(path)
    return path


def run_pi(pi_dir: Path, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """pi_timings.mjs's JSON lines by kind (cached in bench/out/ only with --reuse-pi)."""
    entries = sum(1 for line in path.open("rb") if line.strip()) - 1
    targets = branch_targets(entries, args.branches)
    messages = OUT / f"append-messages-{args.appends}.json"
    messages.write_text(json.dumps(append_messages(args.appends)))
    opts = ["--reps", str(args.reps), "--targets", ",".join(map(str, targets)), "--messages", str(messages)]
    st = path.stat()
    key = [str(path), st.st_size, st.st_mtime_ns, PI_TIMINGS.read_text(), *opts]
    cache = OUT / f"pi-cache-{path.stem}.json"
    if args.reuse_pi and cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("key") == key:
            log(f"pi: reusing {cache.name}")
            return cached["lines"]  # type: ignore[no-any-return]
    log(f"pi: node pi_timings.mjs {path.name}")
    proc = subprocess.run(
        ["node", "--expose-gc", str(placed(PI_TIMINGS, pi_dir)), str(path.resolve()), *opts],
        cwd=pi_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"pi_timings.mjs failed on {path}:\n{proc.stderr}")
    lines = {obj["kind"]: obj for obj in map(json.loads, proc.stdout.splitlines()) if obj}
    cache.write_text(json.dumps({"key": key, "lines": lines}))
    return lines


# pi's SessionManager.open() as pi_timings.mjs times it (a first open, then opens with a GC before each),
# in a node process of its own; run between piweb's imports, so both are timed in the same minute
# (on a shared machine the speed drifts by a third from one minute to the next).
PI_OPEN_JS = """
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const { SessionManager } = await import("@mariozechner/pi-coding-agent");
const [file, reps] = [process.argv[1], Number(process.argv[2])];
const dir = mkdtempSync(join(tmpdir(), "pi-open-"));
const work = join(dir, "session.jsonl");
copyFileSync(file, work);
SessionManager.open(work, dir);
const ts = [];
for (let i = 0; i < reps; i++) {
  globalThis.gc();
  const t0 = process.hrtime.bigint();
  SessionManager.open(work, dir);
  ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(ts));
"""


def pi_open_ms(pi_dir: Path, path: Path, reps: int = 3) -> list[float]:
    proc = subprocess.run(
        ["node", "--expose-gc", "--input-type=module", "-e", PI_OPEN_JS, str(path.resolve()), str(reps)],
        cwd=pi_dir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"pi open() of {path} failed:\n{proc.stderr}")
    return [float(t) for t in json.loads(proc.stdout.strip().splitlines()[-1])]


# --- Django -------------------------------------------------------------------------------------


def snapshot_code() -> Path:
    """Copy the app as it is now to bench/out/code/ and bench that copy, so that edits made to the
    working tree while a run goes on (migrations included) cannot mix two versions in one run."""
    dest = OUT / "code"
    shutil.rmtree(dest, ignore_errors=True)
    for name in CODE_DIRS:
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def configure_django(db_path: Path, database_url: str | None, code: Path) -> None:
    """Settings from the environment, as deployed; children inherit it (PIWEB_BENCH_CODE included)."""
    os.environ["PIWEB_BENCH_CODE"] = str(code)
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    os.environ["PIWEB_SQLITE_PATH"] = str(db_path)
    if database_url:
        os.environ["PIWEB_DATABASE_URL"] = database_url
    else:
        os.environ.pop("PIWEB_DATABASE_URL", None)
    # As deployed: DEBUG off (no query log on every cursor), quiet logs.
    os.environ["PIWEB_DEBUG"] = "false"
    os.environ.setdefault("PIWEB_SECRET_KEY", "piweb-bench-only-secret-key-not-for-production")
    os.environ.setdefault("PIWEB_LOG_LEVEL", "WARNING")
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))
    import django

    django.setup()


def bench_user() -> Any:
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username=BENCH_USER)
    return user


def maxrss_mb() -> float:
    """This process's peak RSS. VmHWM, not getrusage's ru_maxrss: Linux carries the parent's RSS at
    fork into a child's ru_maxrss across exec, so a big parent would inflate the child's figure."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux (bytes on macOS)


def import_child(path: Path) -> None:
    """In a fresh interpreter (the parent set the environment): import path once, print figures."""
    from django.conf import settings

    configure_django(
        Path(os.environ["PIWEB_SQLITE_PATH"]),
        os.environ.get("PIWEB_DATABASE_URL"),
        Path(os.environ.get("PIWEB_BENCH_CODE", ROOT)),
    )

    from sessions_app.store.importing import pipeline

    user = bench_user()
    gc.collect()
    base = maxrss_mb()
    t0 = time.perf_counter()
    data = path.read_bytes()
    result = pipeline.session_import(owner=user, data=data, source_path=str(path))
    ms = (time.perf_counter() - t0) * 1000
    peak = maxrss_mb()
    print(
        json.dumps(
            {
                "ms": r3(ms),
                "peak_rss_mb": round(peak, 1),
                "base_rss_mb": round(base, 1),
                "worker_private_mb": round(result.worker_private_mb, 1),
                "added": result.added,
                "skipped": len(result.skipped),
                "public_id": result.session.public_id,
                "vendor": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            }
        )
    )


def delete_session(public_id: str) -> None:
    from sessions_app.models import Session
    from sessions_app.store import services

    for s in Session.objects.filter(public_id=public_id):
        services.session_delete(session=s)


def import_over_http(path: Path, public_id: str, code: Path) -> dict[str, Any]:
    """POST the file to /api/sessions/import on a daphne of its own (as deployed, from the benched
    copy of the code): the user's figure, upload and multipart parsing included. RSS is daphne's."""
    import http.client
    import uuid

    from sessions_app.access.api_tokens import api_token_create

    delete_session(public_id)
    token = api_token_create(user=bench_user(), name="bench")[1]
    with benchdjango.daphne(code) as (port, pid):
        boundary = uuid.uuid4().hex
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n\r\n'
        t0 = time.perf_counter()
        body = head.encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request(
            "POST", "/api/sessions/import", body=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"},
        )  # fmt: skip
        response = conn.getresponse()
        answer = response.read()
        ms = (time.perf_counter() - t0) * 1000
        if response.status != 201:
            sys.exit(f"import of {path} over HTTP: {response.status} {answer[:300]!r}")
        rss = 0.0
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    rss = int(line.split()[1]) / 1024
        return {"ms": r3(ms), "server_peak_rss_mb": round(rss, 1), "entries": json.loads(answer)["entries"]}


def context_over_http(public_id: str, code: Path, args: argparse.Namespace) -> dict[str, Any]:
    """GET /api/sessions/{id}/context (the leaf's) from a daphne, as a client sees it: request,
    routing, auth by API token, the context, the response read whole (one kept-alive connection)."""
    import http.client

    from sessions_app.access.api_tokens import api_token_create

    token = api_token_create(user=bench_user(), name="bench-context")[1]
    with benchdjango.daphne(code) as (port, _):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        sizes: list[int] = []

        def get() -> None:
            conn.request("GET", f"/api/sessions/{public_id}/context", headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                sys.exit(f"context over HTTP: {response.status} {body[:300]!r}")
            sizes.append(len(body))

        res = measure(get, min_n=max(args.reps, 11), budget_s=args.budget)
        conn.close()
    res["bytes"] = sizes[-1]
    return res


def append_messages(n: int) -> list[dict[str, Any]]:
    """The messages appended by both pi and piweb: user / assistant with a tool call / tool result, in turn."""

    def text(size: int, k: int) -> str:
        fill = "lorem ipsum dolor sit amet, consectetur adipiscing elit "
        s = f"msg {k} "
        while len(s) < size:
            s += fill[: size - len(s)]
        return s

    msgs: list[dict[str, Any]] = []
    for k in range(n):
        ts = 1767600000000 + k * 1000
        if k % 3 == 0:
            msgs.append({"role": "user", "content": [{"type": "text", "text": text(300, k)}], "timestamp": ts})
        elif k % 3 == 1:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": text(400, k)},
                        {"type": "toolCall", "id": f"toolu_{k}", "name": "bash", "arguments": {"command": "npm test"}},
                    ],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {
                        "input": 10,
                        "output": 200,
                        "cacheRead": 50000,
                        "cacheWrite": 1000,
                        "totalTokens": 51210,
                        "cost": {
                            "input": 0.00003,
                            "output": 0.003,
                            "cacheRead": 0.015,
                            "cacheWrite": 0.00375,
                            "total": 0.02178,
                        },
                    },
                    "stopReason": "toolUse",
                    "timestamp": ts,
                }
            )
        else:
            msgs.append(
                {
                    "role": "toolResult",
                    "toolCallId": f"toolu_{k - 1}",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": text(800, k)}],
                    "isError": False,
                    "timestamp": ts,
                }
            )
    return msgs


# --- one file -----------------------------------------------------------------------------------


def bench_piweb(path: Path, pi: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    from django.test import Client

    from sessions_app.models import Entry, Session
    from sessions_app.store import selectors, services

    res: dict[str, Any] = {}
    public_id = header_id(path)
    user = bench_user()

    # import: each run in a fresh interpreter, so its peak RSS is the import's own
    runs, pi_opens = [], []
    for i in range(args.import_reps):
        log(f"pi: open() {path.name} beside import {i + 1}")
        pi_opens += pi_open_ms(args.pi_dir, path)
        delete_session(public_id)
        log(f"piweb: import {path.name} ({i + 1}/{args.import_reps})")
        proc = subprocess.run(
            [sys.executable, __file__, "--import-child", str(path)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            sys.exit(f"import of {path} failed:\n{proc.stderr}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    res["import"] = {
        **stats([r["ms"] for r in runs]),
        # Both processes, added: the worker (large files, forked) runs beside the importer and
        # shares its pages; its own memory is what it wrote since the fork.
        "peak_rss_mb": max(r["peak_rss_mb"] + r.get("worker_private_mb", 0) for r in runs),
        "worker_private_mb": max(r.get("worker_private_mb", 0) for r in runs),
        "base_rss_mb": min(r["base_rss_mb"] for r in runs),
        "added": runs[-1]["added"],
        "skipped": runs[-1]["skipped"],
        "runs": runs,
        "pi_open_beside": stats(pi_opens),
    }
    public_id = runs[-1]["public_id"]
    log(f"piweb: import {path.name} over HTTP (daphne)")
    res["import_http"] = import_over_http(path, public_id, Path(os.environ.get("PIWEB_BENCH_CODE", ROOT)))
    session = Session.objects.get(public_id=public_id)
    leaf = session.leaf_id
    entry_ids = list(Entry.objects.filter(session=session).order_by("seq").values_list("entry_id", flat=True))
    checks: dict[str, Any] = {"entries": len(entry_ids), "pi_entries": pi.get("check", {}).get("entries")}

    client = Client()
    client.force_login(user)
    api = f"/api/sessions/{public_id}"

    # context at the leaf
    log("piweb: context at leaf")
    ctx = selectors.session_context(session=session)
    checks["context_messages"] = len(ctx["messages"])
    checks["pi_context_messages"] = pi.get("check", {}).get("contextMessages")
    res["context_leaf"] = measure(
        lambda: selectors.session_context(session=session), min_n=max(args.reps, 11), budget_s=args.budget
    )

    def api_get(url: str) -> bytes:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return bytes(response.content)

    res["context_leaf_api"] = measure(lambda: api_get(f"{api}/context"), min_n=args.reps, budget_s=args.budget)
    res["context_leaf_api"]["bytes"] = len(api_get(f"{api}/context"))
    # what the API serves: the context as JSON, message entries' messages copied from their lines
    res["context_leaf_json"] = measure(
        lambda: selectors.session_context_json(session=session), min_n=max(args.reps, 11), budget_s=args.budget
    )
    log("piweb: context at leaf over HTTP (daphne)")
    res["context_leaf_http"] = context_over_http(public_id, Path(os.environ.get("PIWEB_BENCH_CODE", ROOT)), args)
    leaf_entry = Entry.objects.get(session=session, entry_id=leaf)
    checks["shape"] = {
        "entries": len(entry_ids),
        "compactions": Entry.objects.filter(session=session, type="compaction").count(),
        "leaf_depth": leaf_entry.depth,
        "context_messages": len(ctx["messages"]),
        "context_bytes": res["context_leaf_http"]["bytes"],
    }

    # branch + context at the seeded targets pi branched to (indices into the entries in file order)
    log("piweb: branch + context")
    idxs = branch_targets(len(entry_ids), args.branches)
    pi_branch = pi.get("branch_ctx", {})
    same_targets = pi_branch.get("targets") == idxs
    counts, ts, ro = [], [], []
    gc.collect()
    for idx in idxs:
        t0 = time.perf_counter()
        services.leaf_move(session=session, entry_id=entry_ids[idx])
        c = selectors.session_context(session=session)
        ts.append((time.perf_counter() - t0) * 1000)
        counts.append(len(c["messages"]))
    for idx in idxs:  # read-only: the context API's ?leaf=ID
        t0 = time.perf_counter()
        selectors.session_context(session=session, leaf_id=entry_ids[idx])
        ro.append((time.perf_counter() - t0) * 1000)
    services.leaf_move(session=session, entry_id=leaf)
    pi_counts = pi_branch.get("ctxCounts")
    res["branch_ctx"] = {**stats(ts), "total_ms": r3(sum(ts)), "ctxMessagesSum": sum(counts)}
    res["context_at_entry"] = {**stats(ro), "total_ms": r3(sum(ro))}
    checks["branch_targets_match_pi"] = same_targets
    checks["branch_ctx_count_mismatches"] = (
        sum(a != b for a, b in zip(counts, pi_counts, strict=True)) if same_targets and pi_counts else None
    )

    # tree
    log("piweb: tree")
    from django.core.cache import cache

    tree = selectors.tree_flat(session=session)
    checks["tree_nodes"] = len(tree["nodes"])
    checks["pi_tree_nodes"] = pi.get("check", {}).get("treeNodes")

    def cold() -> bytes:
        cache.clear()  # what a new server process sees
        return selectors.tree_json(session=session)

    res["tree_cold"] = measure(cold, min_n=max(args.reps, 11), budget_s=args.budget)
    res["tree_api"] = measure(lambda: api_get(f"{api}/tree"), min_n=args.reps, budget_s=args.budget)
    res["tree_api"]["bytes"] = len(api_get(f"{api}/tree"))

    def after(change: Callable[[int], Any]) -> dict[str, Any]:
        """The tree API right after each change (untimed) to the session."""
        ts = []
        for k in range(max(args.reps, 21)):
            change(k)
            t0 = time.perf_counter()
            api_get(f"{api}/tree")
            ts.append((time.perf_counter() - t0) * 1000)
        return stats(ts)

    note = {"type": "custom", "customType": "bench-note", "data": {"k": 0}}
    res["tree_api_append"] = after(lambda k: services.entry_append(session=session, payload=note, author=user))
    res["tree_api_label"] = after(
        lambda k: services.label_set(session=session, target_id=entry_ids[(k * 7919) % len(entry_ids)], label=f"b{k}")
    )
    services.leaf_move(session=session, entry_id=leaf)

    # appends, each its own transaction
    log(f"piweb: {args.appends} appends")
    msgs = append_messages(args.appends)
    per = []
    gc.collect()
    t_all = time.perf_counter()
    for m in msgs:
        t0 = time.perf_counter()
        services.entry_append(session=session, payload={"type": "message", "message": m}, author=user)
        per.append((time.perf_counter() - t0) * 1000)
    res["append"] = {**stats(per), "total_ms": r3((time.perf_counter() - t_all) * 1000), "appends": len(per)}
    checks["entries_after_append"] = Entry.objects.filter(session=session).count()
    res["checks"] = checks
    return res


# --- the table ------------------------------------------------------------------------------------


def fmt(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms >= 100:
        return f"{ms:,.0f}"
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def build_rows(name: str, n: int, linear: bool, pi: dict[str, Any], pw: dict[str, Any], sqlite: bool) -> list[dict]:
    """Rows of (op, file, piweb, pi, ratio, target, verdict); judged on files of the issue's size."""
    formal = n >= BIG
    rows: list[dict[str, Any]] = []

    def row(
        op: str,
        piweb: str,
        pi_txt: str,
        ratio: float | None,
        target: str,
        ok: bool | None,
        judged: bool,
        note: str = "",
        **fig: Any,
    ) -> None:
        verdict = "" if ok is None else (("PASS" if ok else "FAIL") if judged else ("(pass)" if ok else "(fail)"))
        rows.append(
            {
                "op": op,
                "file": name,
                "piweb": piweb,
                "pi": pi_txt,
                "ratio": None if ratio is None else round(ratio, 3),
                "target": target,
                "verdict": verdict,
                "note": note,
                **fig,
            }
        )

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    def med(k: str) -> float | None:
        return pi.get(k, {}).get("median_ms")

    imp = pw["import"]
    beside = imp["pi_open_beside"]
    pi_open = beside["median_ms"]
    r = ratio(imp["median_ms"], pi_open)
    row(
        "import",
        f"{fmt(imp['median_ms'])} (n={imp['n']})",
        f"{fmt(pi_open)} (n={beside['n']})",
        r,
        "<= pi open()",
        None if r is None else r <= 1.0,
        formal,
        f"{imp['added']} entries; pi's open() timed between the imports (pi_timings.mjs's run: {fmt(med('open'))})",
        piweb_ms=imp["median_ms"],
        pi_ms=pi_open,
    )
    row(
        "import peak RSS",
        f"{imp['peak_rss_mb']:.0f} MB",
        f"{pi.get('open', {}).get('rss_mb', '-')} MB",
        ratio(imp["peak_rss_mb"], pi.get("open", {}).get("rss_mb")),
        "< 500 MB",
        imp["peak_rss_mb"] < 500,
        formal,
        f"importer + import worker's own ({imp['worker_private_mb']:.0f} MB); interpreter+Django alone: "
        f"{imp['base_rss_mb']:.0f} MB",
        piweb_mb=imp["peak_rss_mb"],
    )

    web = pw["import_http"]
    row(
        "import via API",
        fmt(web["ms"]),
        fmt(pi_open),
        ratio(web["ms"], pi_open),
        "",
        None,
        formal,
        f"POST to daphne, upload and parsing included; daphne peak RSS {web['server_peak_rss_mb']:.0f} MB",
        piweb_ms=web["ms"],
        pi_ms=pi_open,
    )

    c = pw["context_leaf"]
    pi_ctx = med("buildSessionContext")
    r = ratio(c["median_ms"], pi_ctx)
    checks = pw["checks"]
    msgs = checks["context_messages"]
    per_msg = f", {c['median_ms'] * 1000 / msgs:.0f} us/msg" if msgs else ""
    note = f"{msgs} msgs (pi {checks['pi_context_messages']}){per_msg}"
    row(
        "context@leaf",
        f"{fmt(c['median_ms'])} / {fmt(c['p99_ms'])}",
        fmt(pi_ctx),
        r,
        "",
        None,
        False,
        note + "; selectors.session_context, decoded (what a chat turn reads)",
        piweb_ms=c["median_ms"],
        pi_ms=pi_ctx,
    )
    j = pw["context_leaf_json"]
    r = ratio(j["median_ms"], pi_ctx)
    row(
        "context@leaf JSON",
        f"{fmt(j['median_ms'])} / {fmt(j['p99_ms'])}",
        fmt(pi_ctx),
        r,
        "" if linear else "server <= pi",
        None if linear or r is None else r <= 1.0,
        formal and not linear,
        "selectors.session_context_json: what the API serves (messages copied from their lines)",
        piweb_ms=j["median_ms"],
        pi_ms=pi_ctx,
    )
    a = pw["context_leaf_api"]
    row(
        "context@leaf API",
        f"{fmt(a['median_ms'])} / {fmt(a['p99_ms'])}",
        fmt(pi_ctx),
        ratio(a["median_ms"], pi_ctx),
        "",
        None,
        False,
        f"{a['bytes']:,} B; Django's test client, no network",
        piweb_ms=a["median_ms"],
        pi_ms=pi_ctx,
    )
    h = pw["context_leaf_http"]
    r = ratio(h["median_ms"], pi_ctx)
    row(
        "context@leaf HTTP",
        f"{fmt(h['median_ms'])} / {fmt(h['p99_ms'])}",
        fmt(pi_ctx),
        r,
        ">= 10x faster" if linear else "< 25 ms",
        (None if r is None else r <= 0.1) if linear else h["median_ms"] < 25,
        formal,
        f"{h['bytes']:,} B; GET from daphne with an API token, end to end",
        piweb_ms=h["median_ms"],
        pi_ms=pi_ctx,
    )

    b = pw["branch_ctx"]
    pb = pi.get("branch_ctx", {})
    r = ratio(b["median_ms"], pb.get("median_ms"))
    mism = checks["branch_ctx_count_mismatches"]
    note = f"ctx msgs sum {b['ctxMessagesSum']} (pi {pb.get('ctxMessagesSum', '-')}), mismatches {mism}"
    pi_txt = f"{fmt(pb.get('median_ms'))} / p90 {fmt(pb.get('p90_ms'))}" if pb else "-"
    piweb_txt = f"{fmt(b['median_ms'])} / {fmt(b['p99_ms'])} (p90 {fmt(b['p90_ms'])})"
    if linear and formal:
        row(
            "branch+context",
            piweb_txt,
            pi_txt,
            r,
            ">= 10x faster",
            None if r is None else r <= 0.1,
            True,
            note,
            piweb_ms=b["median_ms"],
            pi_ms=pb.get("median_ms"),
        )
    else:
        row(
            "branch+context",
            piweb_txt,
            pi_txt,
            r,
            "grows w/ context",
            None,
            False,
            note,
            piweb_ms=b["median_ms"],
            pi_ms=pb.get("median_ms"),
        )
    e = pw["context_at_entry"]
    row(
        "context@entry (?leaf=)",
        f"{fmt(e['median_ms'])} / {fmt(e['p99_ms'])}",
        pi_txt,
        ratio(e["median_ms"], pb.get("median_ms")),
        "",
        None,
        False,
        "read-only, same targets",
        piweb_ms=e["median_ms"],
        pi_ms=pb.get("median_ms"),
    )

    pi_tree = med("getTree")
    trees = (
        ("tree API", "tree_api", True, ", {bytes:,} B"),
        ("tree API after append", "tree_api_append", True, ", each after a new entry"),
        ("tree API after label", "tree_api_label", True, ", each after a label on an older entry"),
        ("tree, cold cache", "tree_cold", False, ", a new process: every chunk read and rendered"),
    )
    for op, key, judged, extra in trees:
        t = pw[key]
        r = ratio(t["median_ms"], pi_tree)
        row(
            op,
            f"{fmt(t['median_ms'])} / {fmt(t['p99_ms'])}",
            fmt(pi_tree),
            r,
            "<= pi getTree()" if judged else "",
            None if r is None or not judged else r <= 1.0,
            formal,
            f"{checks['tree_nodes']} nodes (pi {checks['pi_tree_nodes']})" + extra.format(**t),
            piweb_ms=t["median_ms"],
            pi_ms=pi_tree,
        )

    ap = pw["append"]
    pa = pi.get("append", {})
    pi_med = pa["per_append_median_us"] / 1000 if pa else None
    pi_txt = f"{fmt(pi_med)} / p90 {fmt(pa['per_append_p90_us'] / 1000)}" if pa else "-"
    ok = ap["median_ms"] < 2 and ap["p99_ms"] < 10
    row(
        "append (each)",
        f"{fmt(ap['median_ms'])} / {fmt(ap['p99_ms'])}",
        pi_txt,
        ratio(ap["median_ms"], pi_med),
        "med < 2, p99 < 10" + ("" if sqlite else " (SQLite)"),
        ok,
        sqlite,
        f"{ap['appends']} appends, total {fmt(ap['total_ms'])} ms",
        piweb_ms=ap["median_ms"],
        piweb_p99_ms=ap["p99_ms"],
        pi_ms=pi_med,
    )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [
        ("op", "op"),
        ("file", "file"),
        ("piweb", "piweb ms (med / p99)"),
        ("pi", "pi ms (med)"),
        ("ratio", "piweb/pi"),
        ("target", "target"),
        ("verdict", "result"),
        ("note", "notes"),
    ]

    def cell(r: dict[str, Any], k: str) -> str:
        v = r.get(k)
        if k == "ratio":
            return "-" if v is None else (f"{v:.3f}" if v < 0.1 else f"{v:.2f}")
        return str(v)

    widths = {k: max(len(h), *(len(cell(r, k)) for r in rows)) for k, h in cols}
    line = " | ".join(h.ljust(widths[k]) for k, h in cols)
    print(line)
    print("-+-".join("-" * widths[k] for k, _ in cols))
    last = None
    for r in rows:
        if last is not None and r["file"] != last:
            print("-+-".join("-" * widths[k] for k, _ in cols))
        last = r["file"]
        print(" | ".join(cell(r, k).ljust(widths[k]) for k, _ in cols))


# --- main ----------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes", help="entry counts of the generated 5%%-branching files (default 1k,10k,100k; --quick: 1k,10k)"
    )
    ap.add_argument("--linear", help="sizes of linear files (--branch-prob 0); default: the largest size")
    ap.add_argument("--seed", type=int, default=1, help="tests/generate.py's seed (default 1)")
    ap.add_argument("--no-fixture", action="store_true", help="skip pi's tests/fixtures/pi/large-session.jsonl")
    ap.add_argument("--quick", action="store_true", help="small sizes, fewer repetitions")
    ap.add_argument("--database-url", help="bench this database (e.g. postgres://...) instead of a fresh SQLite file")
    ap.add_argument("--db-path", type=Path, default=OUT / "bench.sqlite3", help="the SQLite file (recreated)")
    ap.add_argument("--reps", type=int, help="minimum repetitions per timed op (default 7; --quick 3)")
    ap.add_argument("--import-reps", type=int, help="imports per file, each in a fresh process (default 3; --quick 1)")
    ap.add_argument("--appends", type=int, default=1000)
    ap.add_argument("--branches", type=int, default=100)
    ap.add_argument("--budget", type=float, help="seconds per timed op after the minimum runs (default 3)")
    ap.add_argument(
        "--reuse-pi", action="store_true", help="reuse pi figures cached by an earlier run (not the same run)"
    )
    ap.add_argument("--no-snapshot", action="store_true", help="bench the working tree in place, not a copy")
    ap.add_argument("--json", type=Path, default=OUT / "results.json")
    ap.add_argument("--import-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.import_child:
        import_child(args.import_child)
        return

    args.reps = args.reps or (3 if args.quick else 7)
    args.import_reps = args.import_reps or (1 if args.quick else 3)
    args.budget = args.budget if args.budget is not None else (1.0 if args.quick else 3.0)
    sizes = [parse_size(s) for s in (args.sizes or ("1k,10k" if args.quick else "1k,10k,100k")).split(",") if s]
    linear = [parse_size(s) for s in args.linear.split(",") if s] if args.linear is not None else [max(sizes)]

    OUT.mkdir(parents=True, exist_ok=True)
    args.pi_dir = install()
    files: list[tuple[str, Path, int, bool]] = []
    for n in sizes:
        files.append((f"{size_label(n)} b0.05", generated_file(n, linear=False, seed=args.seed), n, False))
    for n in linear:
        files.append((f"{size_label(n)} linear", generated_file(n, linear=True, seed=args.seed), n, True))
    if not args.no_fixture:
        files.append(("large-session (v1)", FIXTURE, sum(1 for _ in FIXTURE.open("rb")) - 1, False))

    if not args.database_url:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{args.db_path}{suffix}").unlink(missing_ok=True)
    git = git_state()
    code = ROOT if args.no_snapshot else snapshot_code()
    configure_django(args.db_path, args.database_url, code)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    log("migrate")
    call_command("migrate", verbosity=0)
    sqlite = connection.vendor == "sqlite"
    db_desc = (
        f"SQLite {sqlite3.sqlite_version} at {args.db_path}"
        if sqlite
        else f"{connection.vendor} {settings.DATABASES['default'].get('NAME')}"
    )

    results: dict[str, Any] = {
        "env": {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "python": platform.python_version(),
            "database": db_desc,
            "nproc": os.cpu_count(),
            "loadavg_start": os.getloadavg(),
            "git": git,
            "code": str(code),
            "args": {k: str(v) for k, v in vars(args).items()},
        },
        "files": {},
        "rows": [],
    }
    for name, path, n, is_linear in files:
        pi = run_pi(args.pi_dir, path, args)
        results["env"].setdefault("pi", pi.get("env", {}).get("pi"))
        results["env"].setdefault("node", pi.get("env", {}).get("node"))
        pw = bench_piweb(path, pi, args)
        results["files"][name] = {"path": str(path), "entries": n, "linear": is_linear, "pi": pi, "piweb": pw}
        results["rows"].extend(build_rows(name, n, is_linear, pi, pw, sqlite))
        args.json.write_text(json.dumps(results, indent=1))

    env = results["env"]
    env["loadavg_end"] = os.getloadavg()
    args.json.write_text(json.dumps(results, indent=1))
    print(
        f"\npiweb store vs pi {env.get('pi')} (node {env.get('node')}), python {env['python']}, {db_desc}, "
        f"{env['nproc']} CPUs, load avg {env['loadavg_start'][0]:.1f} at start, {env['loadavg_end'][0]:.1f} at end"
    )
    print(f"piweb at {env['git']}" + ("" if args.no_snapshot else f" (run from a copy in {code})"))
    print("ratio = piweb/pi (< 1: piweb faster). Targets are judged (PASS/FAIL) on 100k-entry files;")
    print("(pass)/(fail) on smaller files are for information. pi's branch and append figures: median / p90.\n")
    print_table(results["rows"])
    print("\nFiles (the shape of each, as imported; the context is the leaf's):")
    for name, f in results["files"].items():
        shape = f["piweb"]["checks"].get("shape", {})
        print(
            f"  {name}: {shape.get('entries', 0):,} entries, {'one chain' if f['linear'] else 'branching'}, "
            f"{shape.get('compactions', 0)} compactions, leaf at depth {shape.get('leaf_depth', 0):,}, "
            f"context {shape.get('context_messages', 0):,} messages ({shape.get('context_bytes', 0) / 1e6:.1f} MB)"
        )
    fails = [r for r in results["rows"] if r["verdict"] == "FAIL"]
    print(
        f"\n{len(fails)} target(s) failed"
        + (": " + "; ".join(f"{r['op']} {r['file']}" for r in fails) if fails else "")
    )
    print(f"figures: {args.json}")


if __name__ == "__main__":
    main()
