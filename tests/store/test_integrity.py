"""verify_sessions finds rewritten history: every tampering names the first bad entry."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from sessions_app.models import Entry, Session
from sessions_app.store import services
from sessions_app.store.importing import pipeline
from sessions_app.store.integrity import session_verify

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def generated_file(generated: Callable[..., bytes]) -> bytes:
    return generated(1500, seed=11, branch_prob=0.1, compactions=3, labels=10)


def _sql(statement: str, params: list[Any]) -> None:
    # Tampering goes around the app: triggers off for the statement, as an attacker with the
    # database would do.
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER IF EXISTS sessions_app_entry_no_update")
            cursor.execute("DROP TRIGGER IF EXISTS sessions_app_entry_no_delete")
        else:
            cursor.execute("SET session_replication_role = replica")  # no user triggers (superuser)
        cursor.execute(statement, params)
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = origin")


def test_intact_sessions_verify(alice, generated_file):
    imported = pipeline.session_import(owner=alice, data=generated_file).session
    made = services.session_create(owner=alice, name="made here")
    services.entry_append(session=made, payload={"type": "custom", "customType": "x", "data": {"n": 1}})
    last = Entry.objects.filter(session=imported).order_by("seq").last()
    assert last is not None
    services.session_fork(session=imported, entry_id=last.entry_id, owner=alice)
    for session in Session.objects.all():
        assert session_verify(session=session) is None
    call_command("verify_sessions")


@pytest.mark.parametrize("round_", range(12))
def test_every_kind_of_tampering_is_caught_at_the_first_bad_entry(alice, generated_file, round_):
    session = pipeline.session_import(owner=alice, data=generated_file).session
    rng = random.Random(round_)
    seq = rng.randint(2, session.last_seq - 1)
    row = Entry.objects.get(session=session, seq=seq)
    kind = ["edit", "delete", "delete_last", "swap", "insert", "rehash"][round_ % 6]
    if kind == "edit":
        _sql("UPDATE sessions_app_entry SET raw = replace(raw, '\"type\"', '\"type\" ') WHERE id = %s", [row.pk])
        expected = seq
    elif kind == "delete":
        _sql("DELETE FROM sessions_app_entry WHERE id = %s", [row.pk])
        expected = seq + 1  # the next entry sits where the removed one was
    elif kind == "delete_last":
        last = Entry.objects.get(session=session, seq=session.last_seq)
        _sql("DELETE FROM sessions_app_entry WHERE id = %s", [last.pk])
        expected = 0
    elif kind == "swap":
        other = Entry.objects.get(session=session, seq=seq + 1)
        _sql("UPDATE sessions_app_entry SET raw = %s WHERE id = %s", [other.raw, row.pk])
        expected = seq
    elif kind == "insert":
        shift = "UPDATE sessions_app_entry SET seq = seq + %s WHERE session_id = %s AND seq >= %s"
        _sql(shift, [100000, session.pk, seq])
        _sql(shift, [-99999, session.pk, seq + 100000])
        _sql(
            "INSERT INTO sessions_app_entry (session_id, seq, entry_id, parent_id, type, timestamp, ts_ms, raw,"
            " preview, depth, ctx_thinking, created_at, chain_hash) SELECT session_id, %s, 'forged01', parent_id,"
            " type, timestamp, ts_ms, raw, preview, depth, ctx_thinking, created_at, chain_hash"
            " FROM sessions_app_entry WHERE id = %s",
            [seq, row.pk],
        )
        expected = seq
    else:  # recompute a hash without the key: the attacker's best guess
        import hashlib

        forged = hashlib.sha256(f"\n{row.raw}".encode()).hexdigest()
        _sql("UPDATE sessions_app_entry SET chain_hash = %s WHERE id = %s", [forged, row.pk])
        expected = seq
    finding = session_verify(session=Session.objects.get(pk=session.pk))
    assert finding is not None
    assert finding.seq == expected, (kind, finding)
    with pytest.raises(CommandError, match="1 of 1 sessions failed"):
        call_command("verify_sessions")
