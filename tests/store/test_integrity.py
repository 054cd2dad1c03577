"""verify_sessions finds rewritten history: every tampering names the first bad entry; every
column derived from the lines is derived again and compared; the audit trail accounts for every
session, its owner and its team."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from sessions_app.models import Entry, MessageSpan, Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from sessions_app.store.integrity import session_verify
from tests.builders import assistant, user

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
        assert session_verify(session=session) == []
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
    findings = session_verify(session=Session.objects.get(pk=session.pk))
    assert findings
    assert findings[0].seq == expected, (kind, findings)
    with pytest.raises(CommandError, match="1 of 1 sessions failed"):
        call_command("verify_sessions")


# --- derived columns (issue 19): each is derived again from the lines and compared ----------------

# For each derived column: which row to change (a Q-like filter on stored values) and the forged value
# as SQL. Each change leaves the raw line and the chain hash alone.
FORGERIES: dict[str, tuple[str, str]] = {
    "entry_id": ("type = 'message'", "'forged01'"),
    "parent_id": ("parent_id IS NOT NULL AND depth > 2", "(SELECT e.entry_id FROM sessions_app_entry e"
                  " WHERE e.session_id = sessions_app_entry.session_id AND e.seq = 1)"),
    "type": ("type = 'message'", "'custom'"),
    "role": ("role = 'assistant'", "'user'"),
    "timestamp": ("type = 'message'", "'2000-01-01T00:00:00.000Z'"),
    "ts_ms": ("type = 'message'", "ts_ms + 1"),
    "preview": ("type = 'message'", "'a forged preview'"),
    "depth": ("depth > 0", "depth + 1"),
    "ctx_thinking": ("type = 'message'", """'"xhigh"'"""),
    "ctx_model": ("ctx_model IS NOT NULL", """'{"provider":"evil","modelId":"backdoor"}'"""),
    "ctx_compaction_id": ("ctx_compaction_id IS NOT NULL", "NULL"),
    "kept_from_id": ("kept_from_id IS NOT NULL", "NULL"),
}  # fmt: skip


def test_every_derived_column_is_listed():
    from sessions_app.store import rows

    assert set(FORGERIES) == set(rows.DERIVED)
    kept = {"session_id", "seq", "raw", "author_id", "created_at", "chain_hash"}  # not derived from the line
    assert set(rows.COLUMNS) == set(rows.DERIVED) | kept


@pytest.mark.parametrize("column", list(FORGERIES))
def test_a_derived_column_changed_by_sql_is_named(alice, generated_file, column, capsys):
    session = pipeline.session_import(owner=alice, data=generated_file).session
    where, value = FORGERIES[column]
    pk = Entry.objects.extra(where=[where]).filter(session=session).order_by("-seq").values_list("pk", flat=True)[0]
    before = Entry.objects.filter(pk=pk).values_list("entry_id", column, "seq").get()
    _sql(f"UPDATE sessions_app_entry SET {column} = {value} WHERE id = %s", [pk])
    after = Entry.objects.filter(pk=pk).values_list(column, flat=True).get()
    assert after != before[1]
    findings = session_verify(session=session)
    named = [f for f in findings if f.column == column]
    assert named, findings
    assert (named[0].seq, named[0].stored, named[0].expected) == (before[2], after, before[1])
    with pytest.raises(CommandError, match="1 of 1 sessions failed"):
        call_command("verify_sessions")
    out = capsys.readouterr().out
    assert f"{session.public_id}: entry #{before[2]} ({before[0] if column != 'entry_id' else 'forged01'}): " in out
    assert f"{column} is {after!r}, its line says {before[1]!r}" in out


def test_a_model_changed_by_sql_is_named_on_an_appended_session(alice):
    # The case: the context's model, changed in the database, served by /context.
    session = services.session_create(owner=alice, name="chat")
    services.entry_append(session=session, payload=user("hi"))
    reply = services.entry_append(session=session, payload=assistant("hello"))
    assert reply.ctx_model is not None
    _sql("UPDATE sessions_app_entry SET ctx_model = %s WHERE id = %s", ['{"provider":"x","modelId":"y"}', reply.pk])
    findings = session_verify(session=session)
    assert [(f.seq, f.entry_id, f.column) for f in findings] == [(reply.seq, reply.entry_id, "ctx_model")]
    assert findings[0].expected == reply.ctx_model


def test_a_message_span_moved_by_sql_is_named(alice):
    """The context serves the bytes a span names: one moved or left without its entry is found."""
    session = services.session_create(owner=alice, name="chat")
    first = services.entry_append(session=session, payload=user("hello there"))
    second = services.entry_append(session=session, payload=assistant("hi"))
    assert session_verify(session=session) == []
    assert MessageSpan.objects.filter(session_id=session.pk).count() == 2
    _sql(
        "UPDATE sessions_app_messagespan SET start = start + 1 WHERE session_id = %s AND seq = %s",
        [session.pk, first.seq],
    )
    _sql("INSERT INTO sessions_app_messagespan (session_id, seq, start, length) VALUES (%s, 9, 1, 2)", [session.pk])
    findings = [(f.seq, f.entry_id, f.message) for f in session_verify(session=session)]
    assert findings == [
        (first.seq, first.entry_id, "its message span does not name its message's JSON"),
        (9, "", "a message span names no entry"),
    ]
    assert second.seq not in [f[0] for f in findings]


def test_listing_fields_and_leaf_changed_by_sql_are_named(alice, generated_file):
    session = pipeline.session_import(owner=alice, data=generated_file).session
    _sql(
        "UPDATE sessions_app_session SET name = %s, message_count = message_count + 1, leaf_id = %s, cost = %s"
        " WHERE id = %s",
        ["forged name", "nowhere", 0.5, session.pk],
    )
    columns = {f.column: (f.stored, f.expected) for f in session_verify(session=session)}
    assert columns["name"] == ("forged name", session.name)
    assert columns["cost"] == (0.5, session.cost) and session.cost > 0
    assert columns["message_count"] == (session.message_count + 1, session.message_count)
    assert columns["leaf_id"] == ("nowhere", None)


def test_many_differences_are_capped(alice, generated_file):
    from sessions_app.store.integrity import MAX_FINDINGS, session_report

    session = pipeline.session_import(owner=alice, data=generated_file).session
    _sql("UPDATE sessions_app_entry SET preview = 'x' WHERE session_id = %s", [session.pk])
    report = session_report(session=session)
    assert len(report.findings) == MAX_FINDINGS
    assert report.more == session.last_seq - MAX_FINDINGS


# --- which sessions exist, and whose: the audit trail accounts for them -------------------------


def _verify_fails(capsys, *expected: str) -> str:
    with pytest.raises(CommandError, match="sessions failed verification"):
        call_command("verify_sessions")
    out: str = capsys.readouterr().out
    for text in expected:
        assert text in out, out
    return out


def test_a_session_deleted_by_sql_is_reported(alice, capsys):
    kept = services.session_create(owner=alice, name="kept")
    doomed = services.session_create(owner=alice, name="doomed")
    services.entry_append(session=doomed, payload=user("soon gone"))
    with transaction.atomic():  # the order the entry guard allows: the session row first
        _sql("DELETE FROM sessions_app_session WHERE id = %s", [doomed.pk])
        _sql("DELETE FROM sessions_app_entry WHERE session_id = %s", [doomed.pk])
    out = _verify_fails(capsys, f"{doomed.public_id}: session: deleted outside piweb")
    assert kept.public_id not in out


def test_a_session_deleted_through_the_service_is_not_reported(alice, generated_file):
    services.session_create(owner=alice, name="kept")
    doomed = pipeline.session_import(owner=alice, data=generated_file).session
    exported = "".join(selectors.export_lines(session=doomed)).encode()
    services.session_delete(session=doomed)
    call_command("verify_sessions")
    pipeline.session_import(owner=alice, data=exported)  # the same id again: made anew
    call_command("verify_sessions")


def test_a_session_added_by_sql_is_reported_until_a_baseline_records_it(alice, capsys):
    from sessions_app.store.accounting import sessions_baseline

    services.session_create(owner=alice, name="made here")
    stray = Session.objects.create(public_id="stray", owner=alice, header_raw="{}", created="")
    _verify_fails(capsys, "stray: session: added outside piweb")
    assert sessions_baseline() == 1  # migration 0008, for sessions older than the audit trail
    assert sessions_baseline() == 0
    call_command("verify_sessions")
    assert stray.pk


def test_an_owner_changed_by_sql_is_reported(alice, bob, capsys):
    session = services.session_create(owner=alice, name="mine")
    _sql("UPDATE sessions_app_session SET owner_id = %s WHERE id = %s", [bob.pk, session.pk])
    _verify_fails(
        capsys, f"{session.public_id}: session: its owner is user #{bob.pk}, the audit trail says user #{alice.pk}"
    )
    _sql("UPDATE sessions_app_session SET owner_id = %s WHERE id = %s", [alice.pk, session.pk])
    call_command("verify_sessions")


def test_a_team_changed_by_sql_is_reported_and_a_real_move_is_not(alice, bob, capsys):
    from sessions_app.access import teams

    ours = teams.team_create(name="ours", creator=alice)
    theirs = teams.team_create(name="theirs", creator=bob)
    session = services.session_create(owner=alice, name="mine")
    teams.session_move_to_team(session=session, team=ours, actor=alice)
    call_command("verify_sessions")
    _sql("UPDATE sessions_app_session SET team_id = %s WHERE id = %s", [theirs.pk, session.pk])
    _verify_fails(capsys, f"its team is {theirs.public_id}, the audit trail says {ours.public_id}")
    _sql("UPDATE sessions_app_session SET team_id = NULL WHERE id = %s", [session.pk])
    _verify_fails(capsys, f"its team is None, the audit trail says {ours.public_id}")


def test_a_session_hidden_as_being_deleted_is_reported(alice, capsys):
    session = services.session_create(owner=alice, name="hidden")
    Session.objects.filter(pk=session.pk).update(deleting=True)
    _verify_fails(capsys, f"{session.public_id}: session: it is marked as being deleted, but was not deleted")


@pytest.mark.parametrize("forged", ["", "   ", "{}", "[1]", '{"type":"session","id":"s"}', "NEWLINE"])
def test_an_unreadable_line_is_named_and_the_others_are_still_checked(alice, generated, forged, monkeypatch):
    from sessions_app.store import integrity

    monkeypatch.setattr(integrity, "BATCH", 40)  # the line in the middle of a later batch
    session = pipeline.session_import(owner=alice, data=generated(200, seed=3)).session
    row = Entry.objects.get(session=session, seq=97)
    if forged == "NEWLINE":
        forged = row.raw[:20] + "\n" + row.raw[20:]
    _sql("UPDATE sessions_app_entry SET raw = %s WHERE id = %s", [forged, row.pk])
    _sql("UPDATE sessions_app_entry SET preview = 'forged' WHERE session_id = %s AND seq = 90", [session.pk])
    findings = session_verify(session=session)
    assert findings[0].seq == 97  # the chain
    unreadable = [f for f in findings if "cannot be read" in f.message]
    assert [(f.seq, f.entry_id) for f in unreadable] == [(97, row.entry_id)]
    assert [f.seq for f in findings if f.column == "preview"] == [90]
    children = Entry.objects.filter(session=session, parent_id=row.entry_id).values_list("seq", flat=True)
    orphans = {f.seq for f in findings if "does not fit the tree" in f.message}
    assert set(children) <= orphans


def test_a_session_row_deleted_and_put_back_without_some_entries_is_caught(alice):
    # The entry guard lets entries go once their session row is gone; putting the row back in the
    # same transaction (the foreign keys hold again at commit) leaves a session that lost entries.
    session = services.session_create(owner=alice, name="trimmed")
    for text in ("one", "two", "three"):
        services.entry_append(session=session, payload=user(text))
    values = Session.objects.filter(pk=session.pk).values().get()
    doomed = Entry.objects.get(session=session, seq=4)
    with transaction.atomic():
        _sql("DELETE FROM sessions_app_session WHERE id = %s", [session.pk])
        _sql("DELETE FROM sessions_app_entry WHERE id = %s", [doomed.pk])
        Session.objects.bulk_create([Session(**values)])
    findings = session_verify(session=session)
    assert [(f.seq, f.message) for f in findings][:1] == [(0, "4 entries were written, 3 are stored")]
    assert any(f.message == "the session digest does not match its entries" for f in findings)
