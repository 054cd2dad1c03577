"""Branch compare speed: GET /api/sessions/{id}/compare and the compare page on two long branches.

Usage: .venv/bin/python bench/bench_compare.py [--db /tmp/piweb-bench-compare.sqlite3] [--branch 5000]
       [--prefix 1000] [--reps 9]

Generates a session (written here, pi v3 lines): a shared prefix of --prefix entries, then two
branches of --branch entries each diverging from its last entry (user, assistant with a bash call
every third turn and its result, usage on every reply), imports it into a scratch database and
times requests through Django's test client (server time, in-process, no network) after one
warm-up request each: the API with both leaves, the page's first screen and a later "Show more"
page (median wall-clock and CPU time), then each side's tokens and cost as the page shows them.
Target: under 200 ms for the API and the page.

pi has no compare operation; the nearest, collectEntriesForBranchSummary() both ways (the entries
from the common ancestor to each leaf, as its branch summary finds them) with the session open in
memory, is what bench/pi_compare.mjs times with --pi (open() timed apart).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdjango  # noqa: E402  (bench/, beside this script)

START_MS = 1_765_000_000_000


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def session_lines(prefix: int, branch: int) -> tuple[list[str], str, str, str]:
    """The file's lines, the fork point and the two leaves."""
    usage = {
        "input": 1200,
        "output": 300,
        "cacheRead": 800,
        "cacheWrite": 0,
        "totalTokens": 2300,
        "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0.00024, "cacheWrite": 0, "total": 0.00834},
    }
    lines = [
        json.dumps(
            {"type": "session", "version": 3, "id": "bench-compare", "timestamp": _iso(START_MS), "cwd": "/tmp/bench"}
        )
    ]
    n = 0

    def add(parent: str | None, message: dict[str, Any]) -> str:
        nonlocal n
        n += 1
        entry_id = f"{n:08x}"
        ts = START_MS + n * 1000
        message["timestamp"] = ts
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _iso(ts), "message": message}
        lines.append(json.dumps(entry))
        return entry_id

    def run(parent: str | None, count: int, flavour: str) -> str:
        turn = 0
        while count > 0:
            turn += 1
            words = f"{flavour} step {turn}: please look at the module and make the tests pass again"
            parent = add(parent, {"role": "user", "content": [{"type": "text", "text": words}]})
            count -= 1
            if count <= 0:
                break
            content: list[dict[str, Any]] = [{"type": "text", "text": f"On it ({flavour}), reading turn {turn}."}]
            call = turn % 3 == 0
            if call:
                content.append(
                    {
                        "type": "toolCall",
                        "id": f"c{n}",
                        "name": "bash",
                        "arguments": {"command": f"pytest -q tests/{flavour}_{turn}.py"},
                    }
                )
            parent = add(
                parent,
                {
                    "role": "assistant",
                    "content": content,
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": usage,
                    "stopReason": "toolUse" if call else "stop",
                },
            )
            count -= 1
            if call and count > 0:
                parent = add(
                    parent,
                    {
                        "role": "toolResult",
                        "toolCallId": f"c{n - 1}",
                        "toolName": "bash",
                        "content": [{"type": "text", "text": f"{turn} passed"}],
                        "isError": False,
                    },
                )
                count -= 1
        assert parent is not None
        return parent

    fork = run(None, prefix, "shared")
    leaf_a = run(fork, branch, "first")
    leaf_b = run(fork, branch, "second")
    return lines, fork, leaf_a, leaf_b


def timed(fn: Callable[[], Any], reps: int) -> tuple[str, Any]:
    """Median wall-clock and CPU time (the process's) of reps calls after a warm-up: on a shared,
    loaded machine the wall clock measures the load too, the CPU time only this work."""
    fn()  # warm-up: imports, template compilation
    wall, cpu, result = [], [], None
    for _ in range(reps):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return f"median {statistics.median(wall):6.1f} ms (CPU {statistics.median(cpu):6.1f} ms)", result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="/tmp/piweb-bench-compare.sqlite3")
    parser.add_argument("--branch", type=int, default=5000)
    parser.add_argument("--prefix", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--pi", action="store_true", help="also time pi's nearest operation (pi_compare.mjs)")
    args = parser.parse_args()
    benchdjango.setup(args.db)
    from django.contrib.auth.models import User
    from django.test import Client

    from sessions_app.store.importing import pipeline

    user, _ = User.objects.get_or_create(username="bench-compare")
    lines, fork, leaf_a, leaf_b = session_lines(args.prefix, args.branch)
    data = ("\n".join(lines) + "\n").encode()
    file = Path(args.db).with_suffix(".jsonl")
    file.write_bytes(data)
    session = pipeline.session_import(owner=user, data=data).session
    print(f"session: {len(lines) - 1} entries ({len(data) / 1e6:.1f} MB): a {args.prefix}-entry prefix, then two")
    print(f"  {args.branch}-entry branches from {fork}: leaves {leaf_a} and {leaf_b}")
    client = Client()
    client.force_login(user)
    api = f"/api/sessions/{session.public_id}/compare"
    page = f"/sessions/{session.public_id}/compare/"
    both = {"a": leaf_a, "b": leaf_b}

    took, response = timed(lambda: client.get(api, both), args.reps)
    body = response.json()
    assert response.status_code == 200 and body["ancestorId"] == fork, body.get("ancestorId")
    assert len(body["a"]) == len(body["b"]) == args.branch
    print(
        f"API  GET /compare        {took}  ({len(response.content) / 1e6:.2f} MB, sides "
        f"{len(body['a'])} + {len(body['b'])} nodes)"
    )
    took, response = timed(lambda: client.get(page, both), args.reps)
    assert response.status_code == 200
    html = response.content.decode()
    print(f"page first screen        {took}  ({len(response.content) / 1e3:.0f} KB, {html.count('data-row>')} rows)")
    htmx = Client(headers={"HX-Request": "true"})
    htmx.force_login(user)
    took, response = timed(lambda: htmx.get(page, {**both, "start": args.branch // 2}), args.reps)
    assert response.status_code == 200
    print(f"page Show more (middle)  {took}  ({len(response.content) / 1e3:.0f} KB)")
    for side in ("A", "B"):
        at = html.index(f'data-side="{side}"')
        stats = html[html.index("<span data-tokens", at) : html.index("</div>", at)]
        print(
            f"  side {side}: "
            + " ".join(stats.split(">")[1].split("<")[0].split())
            + ", "
            + stats.split("data-cost>")[1].split("<")[0]
        )
    if args.pi:
        from tests.oracle.install import install, placed

        pi_dir = install()
        out = subprocess.run(
            ["node", str(placed(ROOT / "bench" / "pi_compare.mjs", pi_dir)), str(file), leaf_a, leaf_b, str(args.reps)],
            cwd=pi_dir,
            capture_output=True,
            text=True,
            check=True,
        )
        print("pi: " + out.stdout.strip())


if __name__ == "__main__":
    main()
