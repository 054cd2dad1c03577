"""What the audit trail costs.

    .venv/bin/python bench/bench_audit.py [--appends 2000] [--records 100000] [--database-url URL]

1. Overhead per append: services.entry_append timed with the audit record (as shipped) and with
   audit_record replaced by a no-op, interleaved in blocks so drift hits both alike; prints the
   median and p99 of each and their difference (target: < 1 ms). Also times audit_record alone.
2. Verification: a chain of --records records (written in bulk with the same hash function, then
   topped up through audit_record), then audit_verify() timed end to end (target: < 5 s for 100k).

The database is a fresh SQLite file bench/out/audit.sqlite3 unless --database-url is given
(PostgreSQL: the audit table there must be empty or hold a valid chain).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def _setup(database_url: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    os.environ.setdefault("PIWEB_LOG_LEVEL", "WARNING")
    if database_url:
        os.environ["PIWEB_DATABASE_URL"] = database_url
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        db = OUT / "audit.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        os.environ["PIWEB_SQLITE_PATH"] = str(db)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.3f} ms  p99 {_pct(values, 0.99) * 1000:.3f} ms"


def bench_appends(appends: int) -> dict[str, Any]:
    from django.contrib.auth.models import User

    from sessions_app.access import audit
    from sessions_app.store import services

    user = User.objects.create_user(f"bench-{time.time_ns()}", password="x")
    session = services.session_create(owner=user)
    payload = {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}
    real = audit.audit_record
    with_audit: list[float] = []
    without: list[float] = []

    def noop(**kwargs: Any) -> None:
        return None

    for _ in range(10):  # warm up
        services.entry_append(session=session, payload=payload, author=user)
    block = 50
    for start in range(0, appends, block):
        for audited in (True, False) if (start // block) % 2 == 0 else (False, True):
            audit.audit_record = real if audited else noop  # type: ignore[assignment]
            times = with_audit if audited else without
            for _ in range(block // 2):
                t0 = time.perf_counter()
                services.entry_append(session=session, payload=payload, author=user)
                times.append(time.perf_counter() - t0)
    audit.audit_record = real
    alone: list[float] = []
    for i in range(appends):
        t0 = time.perf_counter()
        audit.audit_record(actor=user, action="session.open", obj_type="session", obj_id=str(i))
        alone.append(time.perf_counter() - t0)
    overhead_median = statistics.median(with_audit) - statistics.median(without)
    overhead_p99 = _pct(with_audit, 0.99) - _pct(without, 0.99)
    print(f"entry_append with audit    {_ms(with_audit)}  ({len(with_audit)} appends)")
    print(f"entry_append without audit {_ms(without)}")
    print(f"audit overhead per append  median {overhead_median * 1000:.3f} ms  p99 {overhead_p99 * 1000:.3f} ms")
    print(f"audit_record alone         {_ms(alone)}")
    verdict = "PASS" if overhead_median < 0.001 else "FAIL"
    print(f"  target < 1 ms (median): {verdict}")
    return {"overhead_median_ms": overhead_median * 1000, "overhead_p99_ms": overhead_p99 * 1000}


def _fill(records: int) -> None:
    """Bulk-write records (same canonical content and HMAC as audit_record), then move the head."""
    from django.db import transaction
    from django.utils import timezone

    from sessions_app.access.audit import _locked_head, canonical, record_hash
    from sessions_app.models import AuditHead, AuditRecord

    with transaction.atomic():
        head = _locked_head()
        previous, seq = head.hash, head.seq
        batch: list[AuditRecord] = []
        for i in range(records):
            seq += 1
            fields: dict[str, Any] = {
                "at": timezone.now(), "actor_id": None, "actor_username": "bench", "action": "entry.append",
                "obj_type": "entry", "obj_id": f"{i:08x}", "session_id": "bench-session", "ip": "127.0.0.1",
                "request_id": f"{i:032x}", "before": None, "after": None, "extra": {"type": "message", "n": i},
            }  # fmt: skip
            digest = record_hash(previous, canonical(seq, **fields))
            batch.append(AuditRecord(seq=seq, prev_hash=previous, hash=digest, **fields))
            previous = digest
            if len(batch) == 5000:
                AuditRecord.objects.bulk_create(batch)
                batch.clear()
        AuditRecord.objects.bulk_create(batch)
        AuditHead.objects.filter(pk=head.pk).update(seq=seq, hash=previous)


def bench_verify(records: int) -> dict[str, Any]:
    from sessions_app.access.audit import audit_verify
    from sessions_app.models import AuditRecord

    missing = records - AuditRecord.objects.count()
    if missing > 0:
        t0 = time.perf_counter()
        _fill(missing)
        print(f"wrote {missing} records in bulk in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    report = audit_verify()
    elapsed = time.perf_counter() - t0
    assert report.finding is None, report.finding
    print(f"audit_verify: {report.checked} records in {elapsed:.2f} s ({report.checked / elapsed:,.0f}/s)")
    print(f"  target < 5 s for 100k: {'PASS' if elapsed * 100_000 / max(report.checked, 1) < 5 else 'FAIL'}")
    return {"verify_seconds": elapsed, "records": report.checked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    _setup(args.database_url)
    from django.db import connection

    print(f"database: {connection.vendor}")
    bench_appends(args.appends)
    bench_verify(args.records)


if __name__ == "__main__":
    main()
