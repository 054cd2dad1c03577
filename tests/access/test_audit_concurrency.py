"""Threads recording at once (each on its own connection): one chain, dense seq, nothing lost."""

from __future__ import annotations

import threading

import pytest
from django.db import close_old_connections, connection

from sessions_app.access.audit import audit_record, audit_verify
from sessions_app.models import AuditRecord
from sessions_app.store import services

THREADS = 6
EACH = 40


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_share_one_chain(alice):
    session = services.session_create(owner=alice, name="busy")
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(EACH):
                if i % 2:
                    audit_record(actor=alice, action="session.open", obj_type="session", obj_id=f"t{n}-{i}")
                else:  # through a service: the entry and its record in one transaction
                    services.entry_append(
                        session=session,
                        payload={"type": "custom", "customType": "t", "data": {"n": n, "i": i}},
                        author=alice,
                    )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    close_old_connections()
    assert errors == []
    seqs = list(AuditRecord.objects.order_by("seq").values_list("seq", flat=True))
    expected = 2 + THREADS * EACH  # session.create + session.rename, then the threads' records
    assert seqs == list(range(1, expected + 1))
    assert AuditRecord.objects.filter(action="entry.append").count() == THREADS * EACH // 2
    report = audit_verify()
    assert (report.checked, report.finding) == (expected, None)
