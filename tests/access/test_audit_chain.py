"""The chain: dense seq, each record linked to the one before, verify_audit passes."""

from __future__ import annotations

import itertools

import pytest
from django.core.management import call_command

from sessions_app.access.audit import audit_record, audit_verify, canonical, record_hash
from sessions_app.models import AuditHead, AuditRecord
from tests.access.audit_records import bad_seq, write_records

pytestmark = pytest.mark.django_db


def test_records_form_one_dense_chain(alice):
    write_records(50)
    audit_record(actor=alice, action="session.rename", obj_type="entry", obj_id="e1", session="s1",
                 before="old", after="new")  # fmt: skip
    rows = list(AuditRecord.objects.order_by("seq"))
    assert [r.seq for r in rows] == list(range(1, 52))
    assert rows[0].prev_hash == ""
    for previous, record in itertools.pairwise(rows):
        assert record.prev_hash == previous.hash
    last = rows[-1]
    assert (last.actor_id, last.actor_username, last.before, last.after) == (alice.pk, "alice", "old", "new")
    assert last.hash == record_hash(
        last.prev_hash,
        canonical(last.seq, last.at, last.actor_id, last.actor_username, last.action, last.obj_type, last.obj_id,
                  last.session_id, last.ip, last.request_id, last.before, last.after, last.extra),
    )  # fmt: skip
    head = AuditHead.objects.get()
    assert (head.seq, head.hash) == (51, last.hash)
    assert audit_verify().finding is None
    assert audit_verify().checked == 51


def test_verify_audit_command(capsys):
    write_records(10)
    call_command("verify_audit")
    assert "10 audit records verified" in capsys.readouterr().out


def test_empty_chain_verifies():
    report = audit_verify()
    assert (report.checked, report.finding) == (0, None)


def test_key_change_breaks_every_record(settings):
    write_records(3)
    settings.PIWEB_CHAIN_KEY = "another key"
    assert bad_seq() == 1


def test_values_are_stored_as_hashed():
    import uuid
    from datetime import UTC, datetime

    audit_record(action="x.y", extra={"id": uuid.UUID(int=1), "when": datetime(2026, 1, 1, tzinfo=UTC), "n": 1.5})
    assert audit_verify().finding is None
    assert AuditRecord.objects.get().extra == {"id": str(uuid.UUID(int=1)), "when": "2026-01-01T00:00:00Z", "n": 1.5}
