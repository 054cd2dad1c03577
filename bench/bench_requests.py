"""What a request costs end to end through daphne, two versions of piweb in alternating runs.

    .venv/bin/python bench/bench_requests.py --code OLD_CHECKOUT --code . [--rounds 5] [--reps 40]

pi's tests/fixtures/pi/large-session.jsonl is imported once into a fresh SQLite file (with the
last --code's version). Each round then starts a daphne of every version in turn (PIWEB_DEBUG=false,
as deployed) on that database and times the same GETs over one kept-alive connection, median of
--reps each: small API responses, where the request's own path through Django is most of the
time (a session's metadata, its tree, its context at the leaf, with an API token), and the
signed-in session page (a cookie). Prints every run and each version's median of the run medians.
"""

from __future__ import annotations

import argparse
import json
import statistics

from bench_context_ab import OUT, ROOT, child  # (bench/, beside this script)

FIXTURE = ROOT / "tests" / "fixtures" / "pi" / "large-session.jsonl"

SETUP = r"""
import json, os, sys
sys.path.insert(0, os.environ["CODE"])
sys.path.insert(1, os.environ["ROOT"])
from bench import benchdjango
benchdjango.setup(os.environ["DB"])
from django.contrib.auth.models import User
from django.test import Client
from sessions_app.access.api_tokens import api_token_create
from sessions_app.store import search_index
from sessions_app.store.importing.pipeline import session_import
user = User.objects.create_user("bench")
public_id = session_import(owner=user, data=open(os.environ["FILE"], "rb").read()).session.public_id
assert search_index.wait_for_indexers(600)
client = Client()
client.force_login(user)
print(json.dumps({"id": public_id, "token": api_token_create(user=user, name="bench")[1],
                  "cookie": client.cookies["sessionid"].value}))
"""

RUN = r"""
import http.client, json, os, statistics, sys, time
sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
import benchdjango
setup = json.loads(os.environ["SETUP"])
reps = int(os.environ["REPS"])
env = {**os.environ, "PIWEB_SQLITE_PATH": os.environ["DB"], "PYTHONPATH": os.environ["CODE"],
       "PIWEB_DEBUG": "false", "PIWEB_ALLOWED_HOSTS": "127.0.0.1"}
token = {"Authorization": "Bearer " + setup["token"]}
cookie = {"Cookie": "sessionid=" + setup["cookie"]}
base = "/api/sessions/" + setup["id"]
gets = {"api meta": (base, token), "api tree": (base + "/tree", token),
        "api context": (base + "/context", token), "session page": ("/sessions/" + setup["id"] + "/", cookie)}
out = {}
with benchdjango.daphne(os.environ["CODE"], env) as (port, _):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for name, (path, headers) in gets.items():
        def get():
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200, (path, response.status, body[:300])
        get()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            get()
            times.append((time.perf_counter() - t0) * 1000)
        out[name] = statistics.median(times)
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    db = str(OUT / "requests.sqlite3")
    secret = {"PIWEB_SECRET_KEY": "bench-requests-" + "k" * 40}  # the sign-in cookie is signed with it
    setup = child(SETUP, args.code[-1], {"DB": db, "FILE": str(FIXTURE), **secret})
    runs: dict[str, list[dict[str, float]]] = {code: [] for code in args.code}
    for r in range(args.rounds):
        for code in args.code:
            result = child(RUN, code, {"DB": db, "SETUP": json.dumps(setup), "REPS": str(args.reps), **secret})
            runs[code].append(result)  # type: ignore[arg-type]
            print(f"round {r + 1} {code}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in result.items()), flush=True)
    for code, results in runs.items():
        medians = {k: statistics.median(res[k] for res in results) for k in results[0]}
        print(f"median {code}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in medians.items()))


if __name__ == "__main__":
    main()
