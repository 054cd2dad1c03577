"""What the permission check costs: permissions.session_get_for_user against the old owner-only lookup,
and the session page for a team member against the same page for a personal session's owner.

Usage: .venv/bin/python bench/bench_permissions.py [--db /tmp/piweb-bench-perm.sqlite3] [-n 2000]

A scratch database gets 1000 teams of 5 members (so the membership lookup runs against a real
index, not a near-empty table) and two identical 200-entry sessions: one personal, one in a team.
The access function alone is timed n times per variant (after warm-up); the page 100 times each
through Django's test client. Target: the role lookup adds < 1 ms to a page (median and p99).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import benchdjango  # noqa: E402  (bench/, beside this script)


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000


def timed(fns: list[Callable[[], object]], n: int) -> list[list[float]]:
    """Run the variants interleaved (a, b, a, b, ...) so that noise from other processes on the
    machine falls on all of them alike; returns each variant's samples."""
    for _ in range(min(50, n)):
        for fn in fns:
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            out[k].append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="/tmp/piweb-bench-perm.sqlite3")
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    benchdjango.setup(args.db)
    from django.contrib.auth.models import User
    from django.test import Client

    from sessions_app.access import permissions
    from sessions_app.errors import SessionNotFound
    from sessions_app.models import Membership, Session, Team
    from sessions_app.store import services

    if os.environ.get("PIWEB_DATABASE_URL"):
        Session.objects.filter(public_id__startswith="bench-perm").update(deleting=True)
        Session.objects.filter(public_id__startswith="bench-perm").delete()
        User.objects.filter(username__startswith="bp-").delete()
        Team.objects.filter(name__startswith="bp-").delete()
    users = User.objects.bulk_create([User(username=f"bp-{i}") for i in range(1000)])
    users = list(User.objects.filter(username__startswith="bp-").order_by("pk"))
    teams = Team.objects.bulk_create([Team(name=f"bp-{i}", slug=f"bp-{i}") for i in range(1000)])
    teams = list(Team.objects.filter(name__startswith="bp-").order_by("pk"))
    Membership.objects.bulk_create(
        [
            Membership(team=t, user=users[(i * 5 + k) % 1000], role="editor")
            for i, t in enumerate(teams)
            for k in range(5)
        ]
    )
    member = users[0]
    team = teams[0]  # member is in it (k = 0)

    def session(public_id: str, owner: User) -> Session:
        s = services.session_create(owner=owner, name="bench")
        Session.objects.filter(pk=s.pk).update(public_id=public_id)
        s.refresh_from_db()
        for i in range(100):
            for role in ("user", "assistant"):
                msg = {
                    "role": role,
                    "content": [{"type": "text", "text": f"{role} {i}"}],
                    "timestamp": 1_767_600_000_000 + i,
                }
                if role == "assistant":
                    msg.update(provider="anthropic", model="m", api="anthropic-messages", stopReason="stop")
                services.entry_append(session=s, payload={"type": "message", "message": msg}, author=owner)
        return s

    personal = session("bench-perm-personal", member)
    shared = session("bench-perm-team", member)
    Session.objects.filter(pk=shared.pk).update(team=team)

    def old_owner_only(public_id: str) -> Session:
        s = Session.objects.filter(public_id=public_id).first()
        if s is None or s.owner_id != member.pk or s.deleting:
            raise SessionNotFound()
        return s

    n = args.n
    names = [
        "old owner-only selector, personal",
        "access, personal (owner)",
        "access, team (role lookup)",
        "role lookup alone (team_role)",
    ]
    fns: list[Callable[[], object]] = [
        lambda: old_owner_only(personal.public_id),
        lambda: permissions.session_get_for_user(user=member, public_id=personal.public_id, need="chat"),
        lambda: permissions.session_get_for_user(user=member, public_id=shared.public_id, need="chat"),
        lambda: permissions.team_role(member, team.pk),
    ]
    rows = list(zip(names, timed(fns, n), strict=True))
    client = Client()
    client.force_login(member)
    for s in (personal, shared):
        assert client.get(f"/sessions/{s.public_id}/").status_code == 200
    page_fns: list[Callable[[], object]] = [
        lambda: client.get(f"/sessions/{personal.public_id}/"),
        lambda: client.get(f"/sessions/{shared.public_id}/"),
    ]
    pages = list(zip(["session page, personal", "session page, team"], timed(page_fns, 100), strict=True))
    db = "postgresql" if os.environ.get("PIWEB_DATABASE_URL") else "sqlite"
    print(f"bench_permissions ({db}; 1000 teams x 5 members; n={n} for the function, 100 pages)")
    for name, samples in rows + pages:
        med, p99 = stats(samples)
        print(f"  {name:38s} median {med:7.3f} ms   p99 {p99:7.3f} ms")
    base = stats(rows[0][1])
    team_cost = stats(rows[2][1])
    added = team_cost[0] - base[0], team_cost[1] - base[1]
    print(f"  added by the team check vs old selector: median {added[0]:.3f} ms, p99 {added[1]:.3f} ms")
    page_p, page_t = stats(pages[0][1]), stats(pages[1][1])
    added = page_t[0] - page_p[0], page_t[1] - page_p[1]
    print(f"  page, team minus personal:               median {added[0]:.3f} ms, p99 {added[1]:.3f} ms")
    if os.environ.get("PIWEB_DATABASE_URL"):
        Session.objects.filter(public_id__startswith="bench-perm").update(deleting=True)
        Session.objects.filter(public_id__startswith="bench-perm").delete()
        User.objects.filter(username__startswith="bp-").delete()
        Team.objects.filter(name__startswith="bp-").delete()


if __name__ == "__main__":
    main()
