"""GET /api/sessions/{id}/context at the leaf, two versions of piweb in alternating runs.

    .venv/bin/python bench/bench_context_ab.py --code OLD_CHECKOUT --code . [--rounds 5] [--reps 15]

The files (bench/out/gen-100k-linear-c10-seed1.jsonl, its leaf context ~9,300 messages; and
gen-100k-b05-seed1.jsonl, 5% branching) are imported once into a fresh SQLite file with the last
--code's version (its indexer's catch-up finished). Each round then runs every version in a fresh
interpreter on that database: server time (selectors.session_context_json, median of --reps) and
end to end (a daphne of that version, the same GET over one kept-alive connection, median of
--reps). Prints every run and each version's median of the run medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
FILES = {"linear": "gen-100k-linear-c10-seed1.jsonl", "b05": "gen-100k-b05-seed1.jsonl"}

SETUP = r"""
import json, os, sys
sys.path.insert(0, os.environ["CODE"])
sys.path.insert(1, os.environ["ROOT"])
from bench import benchdjango
benchdjango.setup(os.environ["DB"])
from django.contrib.auth.models import User
from sessions_app.access.api_tokens import api_token_create
from sessions_app.store import search_index
from sessions_app.store.importing.pipeline import session_import
user = User.objects.create_user("bench")
path = os.environ["FILE"]
public_id = session_import(owner=user, data=open(path, "rb").read()).session.public_id
assert search_index.wait_for_indexers(600)
print(json.dumps({"id": public_id, "token": api_token_create(user=user, name="bench")[1]}))
"""

RUN = r"""
import http.client, json, os, statistics, sys, time
sys.path.insert(0, os.environ["CODE"])
sys.path.insert(1, os.environ["ROOT"])
sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
import benchdjango
benchdjango.setup(os.environ["DB"], keep=True)
from sessions_app.models import Session
from sessions_app.store import selectors
setup = json.loads(os.environ["SETUP"])
reps = int(os.environ["REPS"])

def median_ms(fn):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ts)

session = Session.objects.get(public_id=setup["id"])
out = {"server": median_ms(lambda: selectors.session_context_json(session=session))}
env = {**os.environ, "PIWEB_SQLITE_PATH": os.environ["DB"], "PYTHONPATH": os.environ["CODE"],
       "PIWEB_DEBUG": "false", "PIWEB_ALLOWED_HOSTS": "127.0.0.1", "PIWEB_SECRET_KEY": "bench-context-" + "k" * 40}
with benchdjango.daphne(os.environ["CODE"], env) as (port, _):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    def get():
        auth = {"Authorization": "Bearer " + setup["token"]}
        conn.request("GET", f"/api/sessions/{setup['id']}/context", headers=auth)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
    out["http"] = median_ms(get)
print(json.dumps(out))
"""


def child(script: str, code: str, env: dict[str, str]) -> dict[str, object]:
    full = {**os.environ, **env, "CODE": str(Path(code).resolve()), "ROOT": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--keep", action="store_true", help="reuse the databases of an earlier run")
    args = ap.parse_args()
    setups: dict[str, dict[str, object]] = {}
    for name, file in FILES.items():
        db = str(OUT / f"context-ab-{name}.sqlite3")
        saved = Path(db + ".json")
        if not (args.keep and saved.exists()):
            saved.write_text(json.dumps(child(SETUP, args.code[-1], {"DB": db, "FILE": str(OUT / file)})))
        setups[name] = {**json.loads(saved.read_text()), "db": db}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(c, n): [] for c in args.code for n in FILES}
    for r in range(args.rounds):
        for code in args.code:
            for name, setup in setups.items():
                env = {"DB": str(setup["db"]), "SETUP": json.dumps(setup), "REPS": str(args.reps)}
                result = child(RUN, code, env)
                runs[code, name].append(result)  # type: ignore[arg-type]
                figures = ", ".join(f"{k} {v:.1f} ms" for k, v in result.items())  # type: ignore[str-format]
                print(f"round {r + 1} {code} {name}: {figures}", flush=True)
    for (code, name), results in runs.items():
        medians = {k: statistics.median(res[k] for res in results) for k in results[0]}
        print(f"median {code} {name}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in medians.items()))


if __name__ == "__main__":
    main()
