"""Search across sessions (issue 18): query speed on a generated corpus, and what indexing adds to
an import.

    .venv/bin/python bench/bench_search.py [--entries 100000] [--sessions 10] [--database-url URL] [--queries-only]

The issue's corpus: --sessions generated files of --entries entries each (tests/generate.py, one
seed per file), owned by three users: the first two users' sessions are in two teams (the third
user's are personal), and an outsider sees none of them. A rare word is planted in 3 user messages
per session. Then, as a member of both teams:

  rare     p50 and p95 of a word planted in 3 entries per session (target: p50 under 50 ms)
  common   p50 and p95 of a word in at least 10% of the documents (target: p50 under 200 ms),
           and whether the answer was ranked or in recency order
  shapes   each filter (role:, tool:, model:, label: of the commonest label, team:, a date
           range, session: of the oldest session) with the common word, the word quoted, a phrase
           of common words and a prefix of 2 letters, and phrase and prefix alone; prefixes of 1 and
           4 letters (SQLite's FTS5 indexes those of 2 and 3: search_index.FTS_PREFIXES) alone and
           with label:: p50 and p95 of each (the same targets)
  outsider a query that matches everywhere, as the outsider: must find nothing
  import   one more --entries file imported as deployed: the time until the import returns (the
           session published and readable; its search index is built right after, by a thread of
           its own: store/search_index.py) and until it is searchable, best of --import-runs
           (target: ratio <= 1.2); with the CPU seconds of the importing process and of its worker
           child, which show where the time goes on a busy machine; then the text index's own work on
           that import's documents, already in memory, into an empty index (SQLite: FTS5 as
           configured, with no prefix index, and with no positions; PostgreSQL: to_tsvector), and
           the least ratio any indexing could reach with both of them spread over every core

--sessions 0 measures only the import (no corpus, no queries). --queries-only times the queries
again on the corpus a previous run left in the database (no build, no import).

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

    # 1 label per 200 entries (tests/generate.py's: a word and a number), so label: finds some.
    lines = generate(entries, seed, labels=max(1, entries // 200)).decode().splitlines()
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


def timed(run: Any, times: int = 20) -> tuple[float, float, Any]:
    """(p50, p95) in ms of `times` runs, and the last result."""
    took: list[float] = []
    result = None
    for _ in range(times):
        start = time.perf_counter()
        result = run()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took), statistics.quantiles(took, n=20)[-1], result


def cpu_s() -> tuple[float, float, float]:
    """CPU seconds so far of this process, of its reaped children (the import worker) and of its
    PostgreSQL backend when the server runs on this machine (0 on SQLite, or if unreadable)."""
    import resource

    from django.db import connection

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    server = 0.0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime, server


def common_word(min_length: int = 3) -> tuple[str, float]:
    """A word of at least min_length letters in at least 10% of the documents (the most frequent of
    a sample)."""
    from sessions_app.core.searchtext import WORD
    from sessions_app.models import SearchDoc

    texts = list(SearchDoc.objects.order_by("?").values_list("text", flat=True)[:3000])
    counts = Counter(w for t in texts for w in {w.lower() for w in WORD.findall(t)} if len(w) >= min_length)
    word, n = counts.most_common(1)[0]
    return word, n / max(1, len(texts))


def common_label(reader: Any) -> str:
    """The label text on most entries the reader may see (tests/generate.py's labels are a word and
    a number: "good" alone is none of them)."""
    from django.db.models import Count

    from sessions_app.models import SearchDoc
    from sessions_app.store import selectors

    readable = selectors.session_list_for_user(user=reader).values("pk")
    found = (
        SearchDoc.objects.filter(kind="label", session_id__in=readable)
        .values("text")
        .annotate(n=Count("id"))
        .order_by("-n", "text")
        .first()
    )
    return str(found["text"]) if found else "good"


def shapes(word: str, long_word: str, first_session: str, label: str) -> list[tuple[str, str]]:
    """(name, query) of the filter and text combinations measured besides the rare and common
    word: each filter with a common word, a phrase and a prefix (a filter the planner misjudges
    turns a fast query into a scan of the whole index); prefixes of lengths FTS5 keeps no index
    of, alone and with label: (long_word: a common word of 4 letters or more)."""
    phrase = '"ls la src"'  # a phrase of common words that also occur apart
    out = [
        ("phrase", phrase),
        ("prefix", f"{word[:2]}*"),
        ("prefix 1 letter", f"{word[:1]}*"),
        ("prefix 4 letters", f"{long_word[:4]}*"),
        ("label: + prefix 1 letter", f"{word[:1]}* label:{label}"),
        ("label: + prefix 4 letters", f"{long_word[:4]}* label:{label}"),
        ("phrase + prefix", f"{phrase} {word[:2]}*"),
        # Common words, seldom side by side: GIN keeps no positions, every document with both
        # words is read to find the few where they touch, whichever plan is chosen.
        ("seldom phrase + role:user", f'"{word} the" role:user'),
    ]
    filters = [
        ("role:user", "role:user"),
        ("tool:bash", "tool:bash"),
        ("model:sonnet", "model:sonnet"),
        ("label:", f"label:{label}"),
        ("team:A", "team:A"),
        ("date range", "after:2026-01-05 before:2026-01-06"),
        ("session: oldest", f"session:{first_session}"),
    ]
    for name, text in filters:
        out += [
            (f"{name} + word", f"{word} {text}"),
            (f"{name} + quoted word", f'"{word}" {text}'),
            (f"{name} + phrase", f"{phrase} {text}"),
            (f"{name} + prefix", f"{word[:2]}* {text}"),
        ]
    return out


def query_report(reader: Any, outsider: Any, first_session: str, runs: int = 20) -> list[str]:
    """The query timings on the corpus, as lines to print."""
    from sessions_app.store import search

    rare_ms, rare_p95, rare = timed(lambda: search.search(user=reader, q=RARE, limit=20), runs)
    word, share = common_word()
    common_ms, common_p95, common = timed(lambda: search.search(user=reader, q=word, limit=20), runs)
    outsider_hits = len(search.search(user=outsider, q=word, limit=20).hits)

    lines = [
        f"  rare word   p50 {rare_ms:7.1f} ms  p95 {rare_p95:7.1f} ms  ({len(rare.hits)} hits, ranked={rare.ranked})"
        "  target p50 < 50 ms",
        f"  common word p50 {common_ms:7.1f} ms  p95 {common_p95:7.1f} ms  ({word!r}, in {share:.0%} of documents;"
        f" ranked={common.ranked})  target p50 < 200 ms",
    ]
    long_word = word if len(word) >= 4 else common_word(4)[0]
    for name, q in shapes(word, long_word, first_session, common_label(reader)):
        p50, p95, result = timed(lambda q=q: search.search(user=reader, q=q, limit=20), max(5, runs // 4))
        lines.append(
            f"  {name:28} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  ({len(result.hits)} hits, ranked={result.ranked})  {q}"
        )
        log(lines[-1].strip())
    lines.append(f"  outsider hits: {outsider_hits} (must be 0)")
    return lines


def oldest_readable(reader: Any) -> str:
    from sessions_app.store import selectors

    return str(selectors.session_list_for_user(user=reader).order_by("id").values_list("public_id", flat=True)[0])


def queries_only(database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "piweb.settings"
    if database_url:
        os.environ["PIWEB_DATABASE_URL"] = database_url
    else:
        os.environ.pop("PIWEB_DATABASE_URL", None)
    os.environ["PIWEB_SQLITE_PATH"] = str(OUT / "search.sqlite3")
    os.environ["PIWEB_DEBUG"] = "false"
    os.environ.setdefault("PIWEB_SECRET_KEY", "piweb-bench-only-secret-key-not-for-production")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.db import connection

    from sessions_app.models import SearchDoc

    reader, outsider = User.objects.get(username="bench0"), User.objects.get(username="outsider")
    print(f"\nsearch bench on {connection.vendor}, the corpus left in place: {SearchDoc.objects.count()} documents")
    print(*query_report(reader, outsider, oldest_readable(reader)), sep="\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--import-runs", type=int, default=2)
    ap.add_argument(
        "--queries-only",
        action="store_true",
        help="time the queries on the corpus a previous run left in the database (no build, no import)",
    )
    args = ap.parse_args()
    if args.queries_only:
        queries_only(args.database_url)
        return
    setup_django(args.database_url)

    from django.contrib.auth.models import User

    from sessions_app.access import teams
    from sessions_app.store import search_index
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
        search_index.wait_for_indexers(3600)
        if k % 3 < 2:
            teams.session_move_to_team(session=result.session, team=[team_a, team_b][k % 3], actor=owner)
        log(f"session {k + 1}/{args.sessions} imported and indexed")
    total = args.sessions * args.entries
    log(f"corpus of {total} entries in {time.perf_counter() - started:.0f} s")
    reader = users[0]  # in both teams: sees the sessions of bench0 and bench1 (2/3 of the corpus)

    report = query_report(reader, outsider, oldest_readable(reader)) if args.sessions else []

    from sessions_app.store import services

    data = planted(args.entries, 999)
    timings: dict[str, list[tuple[float, float, float, float]]] = {"readable": [], "searchable": []}
    floors: list[tuple[list[tuple[str, float]], float]] = []
    for _ in range(args.import_runs):
        own, children, server = cpu_s()
        start = time.perf_counter()
        imported = pipeline.session_import(owner=users[2], data=data)
        readable = time.perf_counter() - start
        readable_cpu = cpu_s()
        search_index.wait_for_indexers(3600)
        searchable = time.perf_counter() - start
        after = cpu_s()
        before = (own, children, server)
        timings["readable"].append((readable, *(b - a for a, b in zip(before, readable_cpu, strict=True))))
        timings["searchable"].append((searchable, *(b - a for a, b in zip(before, after, strict=True))))
        log(f"import: readable after {readable:.2f} s, searchable after {searchable:.2f} s")
        floors.append(text_index_floor(imported.session.pk))
        services.session_delete(session=imported.session)
    with_s, without_s = min(timings["searchable"]), min(timings["readable"])
    # The floor of the run the import alone was quickest in, beside that run's CPU.
    floor, least_index = floors[timings["readable"].index(without_s)]

    from django.db import connection

    print(f"\nsearch bench on {connection.vendor}: {args.sessions} sessions x {args.entries} entries = {total}")
    print(*report, sep="\n")
    print(
        f"  import of {args.entries} entries: readable after {without_s[0]:.2f} s, searchable after {with_s[0]:.2f} s,"
        f" ratio {with_s[0] / without_s[0]:.2f}  target <= 1.20"
    )
    for mode, runs in timings.items():
        print(
            f"    {mode:12} "
            + "; ".join(f"{w:.2f} s wall, CPU {o:.2f} s + worker {c:.2f} s + server {v:.2f} s" for w, o, c, v in runs)
        )
    budget = 0.2 * without_s[0]
    print(f"    the target leaves {budget:.2f} s for indexing; the least work of indexing this import's documents:")
    for name, seconds in floor:
        print(f"      {name:66} {seconds:.2f} s  ({seconds / budget:.1f}x what the target leaves)")
    # The least any indexing can add: the import's CPU, the documents' making and the index's own
    # (with positions, which phrases need), spread perfectly over every core, nothing else done;
    # never less than the import alone. (The import's CPU may hold its indexer thread's first moments.)
    cores = os.cpu_count() or 1
    least = max(without_s[0], (sum(without_s[1:]) + least_index) / cores)
    print(
        "    with every core busy and nothing but the import, its documents and that index:"
        f" ({sum(without_s[1:]):.2f} + {least_index:.2f}) CPU s / {cores} cores = {least:.2f} s,"
        f" ratio {least / without_s[0]:.2f} at the least"
    )


def text_index_floor(session_pk: int) -> tuple[list[tuple[str, float]], float]:
    """What no indexing of a session can go below: making its documents from its entries (parsed
    already), and the full-text engine's own work on them (the texts alone, already in memory, into
    an empty index; no other table) in each configuration; and the least sum of the two that still
    answers every query the issue asks for (phrases need positions)."""
    from django.db import connection

    from sessions_app.core import jsjson
    from sessions_app.core.searchtext import index_rows
    from sessions_app.models import SearchDoc
    from sessions_app.store import search_index

    texts = list(SearchDoc.objects.filter(session_id=session_pk).values_list("text", flat=True))
    label = f"{len(texts):,} documents, {sum(map(len, texts)) / 1e6:.0f}M characters"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, ts_ms, raw FROM sessions_app_entry WHERE session_id = %s ORDER BY seq", [session_pk]
        )
        entries = [(seq, ts_ms, jsjson.loads(raw)) for seq, ts_ms, raw in cursor.fetchall()]
    start = time.perf_counter()
    index_rows(entries)  # (the entries parsed already: as if the import's parse were shared)
    made = ("the documents made from the parsed entries (searchtext.index_rows)", time.perf_counter() - start)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            start = time.perf_counter()
            cursor.execute(
                "SELECT count(to_tsvector('simple', regexp_replace(t, '[\\W_]+', ' ', 'g'))) FROM unnest(%s::text[]) t",
                [texts],
            )
            seconds = time.perf_counter() - start
            return [made, (f"to_tsvector of {label}", seconds)], made[1] + seconds
    import sqlite3

    found = [made]
    prefixes = " ".join(map(str, search_index.FTS_PREFIXES))
    for name, options in (
        (f"FTS5 as configured (prefix '{prefixes}'), {label}", f"detail='full', prefix='{prefixes}'"),
        ("FTS5 with no prefix index", "detail='full'"),
        ("FTS5 at its cheapest (no positions: phrase queries refused)", "detail='none'"),
    ):
        db = sqlite3.connect(":memory:")
        db.execute(
            f"CREATE VIRTUAL TABLE f USING fts5(text, content='', tokenize='unicode61 remove_diacritics 2', {options})"
        )
        start = time.perf_counter()
        db.executemany("INSERT INTO f(rowid, text) VALUES (?, ?)", enumerate(texts, 1))
        db.commit()
        found.append((name, time.perf_counter() - start))
        db.close()
    return found, made[1] + found[2][1]


if __name__ == "__main__":
    main()
