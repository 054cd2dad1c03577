"""Search across sessions (issue 18): query speed on a generated corpus, and what indexing adds to
an import.

    .venv/bin/python bench/bench_search.py [--entries 100000] [--sessions 10] [--database-url URL]

The issue's corpus: --sessions generated files of --entries entries each (tests/generate.py, one
seed per file), owned by three users: the first two users' sessions are in two teams (the third
user's are personal), and an outsider sees none of them. A rare word is planted in 3 user messages
per session. Then, as a member of both teams:

  rare     p50 of a word planted in 3 entries per session (target: under 50 ms)
  common   p50 of a word in at least 10% of the documents (target: under 200 ms), and whether
           the answer was ranked or in recency order
  outsider a query that matches everywhere, as the outsider: must find nothing
  import   one more --entries file imported with the search index kept (as deployed) and
           without it (index_session replaced by a no-op), best of 2 each (target: ratio <= 1.2)

The database is a fresh SQLite file bench/out/search.sqlite3 unless --database-url names a
PostgreSQL database (its public schema is dropped first: use a database of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "out"
RARE = "zyxwrarebench"


def log(msg: str) -> None:
    print(f"[bench_search {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def setup_django(database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / "search.sqlite3"
    if database_url:
        os.environ["PIWEB_DATABASE_URL"] = database_url
    else:
        os.environ.pop("PIWEB_DATABASE_URL", None)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.environ["PIWEB_SQLITE_PATH"] = str(db)
    os.environ["PIWEB_DEBUG"] = "false"
    os.environ.setdefault("PIWEB_SECRET_KEY", "piweb-bench-only-secret-key-not-for-production")
    os.environ.setdefault("PIWEB_LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    if database_url:
        from django.db import connection

        with connection.cursor() as cursor:  # the append-only guards refuse a flush: start from nothing
            cursor.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    call_command("migrate", verbosity=0)


def planted(entries: int, seed: int) -> bytes:
    from tests.generate import generate

    lines = generate(entries, seed).decode().splitlines()
    done = 0
    for i in range(len(lines) - 1, 0, -1):
        data = json.loads(lines[i])
        if data["type"] == "message" and data["message"]["role"] == "user" and i % 7 == 0:
            data["message"]["content"] = [{"type": "text", "text": f"please look at {RARE} now"}]
            lines[i] = json.dumps(data)
            done += 1
            if done == 3:
                break
    return ("\n".join(lines) + "\n").encode()


def p50(run: Any, times: int = 15) -> tuple[float, Any]:
    took: list[float] = []
    result = None
    for _ in range(times):
        start = time.perf_counter()
        result = run()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took), result


def common_word() -> tuple[str, float]:
    """A word in at least 10% of the documents (the most frequent of a sample)."""
    from sessions_app.core.searchtext import WORD
    from sessions_app.models import SearchDoc

    texts = list(SearchDoc.objects.order_by("?").values_list("text", flat=True)[:3000])
    counts = Counter(w for t in texts for w in {w.lower() for w in WORD.findall(t)} if len(w) > 2)
    word, n = counts.most_common(1)[0]
    return word, n / max(1, len(texts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()
    setup_django(args.database_url)

    from django.contrib.auth.models import User

    from sessions_app.access import teams
    from sessions_app.store import search, search_index
    from sessions_app.store.importing import pipeline

    users = [User.objects.create_user(f"bench{i}") for i in range(3)]
    outsider = User.objects.create_user("outsider")
    team_a = teams.team_create(name="A", creator=users[0])
    team_b = teams.team_create(name="B", creator=users[1])
    teams.member_invite(team=team_b, username="bench0", role="viewer", actor=users[1])
    teams.member_invite(team=team_a, username="bench1", role="viewer", actor=users[0])
    started = time.perf_counter()
    for k in range(args.sessions):
        owner = users[k % 3]
        result = pipeline.session_import(owner=owner, data=planted(args.entries, 1000 + k))
        if k % 3 < 2:
            teams.session_move_to_team(session=result.session, team=[team_a, team_b][k % 3], actor=owner)
        log(f"session {k + 1}/{args.sessions} imported and indexed")
    total = args.sessions * args.entries
    log(f"corpus of {total} entries in {time.perf_counter() - started:.0f} s")
    reader = users[0]  # in both teams: sees the sessions of bench0 and bench1 (2/3 of the corpus)

    rare_ms, rare = p50(lambda: search.search(user=reader, q=RARE, limit=20))
    word, share = common_word()
    common_ms, common = p50(lambda: search.search(user=reader, q=word, limit=20))
    phrase_ms, _ = p50(lambda: search.search(user=reader, q=f'"{word}" role:user', limit=20))
    outsider_hits = len(search.search(user=outsider, q=word, limit=20).hits)

    data = planted(args.entries, 999)
    timings: dict[str, list[float]] = {"with index": [], "without": []}
    real = search_index.index_session
    for _ in range(2):
        for mode in ("without", "with index"):
            search_index.index_session = real if mode == "with index" else (lambda session_pk: 0)
            start = time.perf_counter()
            imported = pipeline.session_import(owner=users[2], data=data)
            timings[mode].append(time.perf_counter() - start)
            search_index.index_session = real
            from sessions_app.store import services

            services.session_delete(session=imported.session)
    with_s, without_s = min(timings["with index"]), min(timings["without"])

    from django.db import connection

    print(f"\nsearch bench on {connection.vendor}: {args.sessions} sessions x {args.entries} entries = {total}")
    print(f"  rare word   p50 {rare_ms:7.1f} ms  ({len(rare.hits)} hits, ranked={rare.ranked})  target < 50 ms")
    print(
        f"  common word p50 {common_ms:7.1f} ms  ({word!r}, in {share:.0%} of documents; ranked={common.ranked})"
        "  target < 200 ms"
    )
    print(f"  common word as a phrase + role:user p50 {phrase_ms:7.1f} ms")
    print(f"  outsider hits: {outsider_hits} (must be 0)")
    print(
        f"  import of {args.entries} entries: {without_s:.2f} s alone, {with_s:.2f} s with indexing,"
        f" ratio {with_s / without_s:.2f}  target <= 1.20"
    )


if __name__ == "__main__":
    main()
