"""Entries are append-only: the database refuses every UPDATE, every DELETE of an entry whose session
row still exists (whatever its `deleting` flag says), and TRUNCATE,
whichever way it is issued. Only session_delete removes entries, and only a whole session's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from sessions_app.models import Entry, Session
from sessions_app.store import services
from tests.builders import assistant, user
from tests.store.helpers import assert_tree, counts, snapshot

pytestmark = pytest.mark.django_db

REFUSED = "append-only"


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice, name="guarded")
    services.entry_append(session=session, payload=user("hello"), author=alice)
    services.entry_append(session=session, payload=assistant("hi"))
    assert session.leaf_id is not None
    services.label_set(session=session, target_id=session.leaf_id, label="kept", author=alice)
    return session


@pytest.fixture
def other(alice):
    session = services.session_create(owner=alice)
    services.entry_append(session=session, payload=user("bystander"))
    return session


def refused(operation: Callable[[], object]) -> None:
    """Run operation in a savepoint; it must fail in the database with the trigger's message."""
    with pytest.raises(DatabaseError, match=REFUSED), transaction.atomic():
        operation()


def test_it_refuses_save_after_changing_a_field(session):
    before = snapshot(session)
    entry = Entry.objects.get(session=session, seq=2)
    entry.raw = entry.raw.replace("hello", "HACKED")
    refused(entry.save)
    entry.refresh_from_db()
    assert "hello" in entry.raw
    assert snapshot(session) == before


@pytest.mark.parametrize("field", ["raw", "parent_id", "seq", "entry_id", "author", "depth"])
def test_it_refuses_save_of_any_single_field(session, bob, field):
    before = snapshot(session)
    entry = Entry.objects.get(session=session, seq=3)
    values = {"raw": "{}", "parent_id": None, "seq": 99, "entry_id": "deadbeef", "author": bob, "depth": 7}
    setattr(entry, field, values[field])
    refused(lambda: entry.save(update_fields=[field]))
    assert snapshot(session) == before


def test_it_refuses_save_of_an_unchanged_entry(session):
    before = snapshot(session)
    entry = Entry.objects.get(session=session, seq=1)
    refused(entry.save)
    assert snapshot(session) == before


def test_it_refuses_queryset_update(session, other):
    before, bystander = snapshot(session), snapshot(other)
    refused(lambda: Entry.objects.filter(session=session).update(raw="{}"))
    refused(lambda: Entry.objects.filter(session=session, seq=1).update(parent_id="x"))
    refused(lambda: Entry.objects.all().update(depth=0))
    assert snapshot(session) == before
    assert snapshot(other) == bystander


def test_it_refuses_bulk_update(session):
    before = snapshot(session)
    entries = list(Entry.objects.filter(session=session))
    for e in entries:
        e.timestamp = "1970-01-01T00:00:00.000Z"
    refused(lambda: Entry.objects.bulk_update(entries, ["timestamp"]))
    refused(lambda: Entry.objects.bulk_update(entries[:1], ["timestamp"], batch_size=1))
    assert snapshot(session) == before


def test_it_refuses_queryset_delete(session, other):
    before, bystander = snapshot(session), snapshot(other)
    refused(lambda: Entry.objects.filter(session=session, seq=3).delete())
    refused(lambda: Entry.objects.filter(session=session).delete())
    refused(lambda: Entry.objects.all().delete())
    assert snapshot(session) == before
    assert snapshot(other) == bystander


def test_it_refuses_instance_delete(session):
    before = snapshot(session)
    for entry in Entry.objects.filter(session=session):
        refused(entry.delete)
    assert snapshot(session) == before


def test_it_refuses_raw_sql_update(session):
    before = snapshot(session)

    def update():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE sessions_app_entry SET raw = %s WHERE session_id = %s", ["{}", session.pk])

    def update_one_column():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE sessions_app_entry SET ts_ms = ts_ms + 1 WHERE session_id = %s", [session.pk])

    refused(update)
    refused(update_one_column)
    assert snapshot(session) == before


def test_it_refuses_raw_sql_delete(session):
    before = snapshot(session)

    def delete_one():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM sessions_app_entry WHERE session_id = %s AND seq = 1", [session.pk])

    def delete_all():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM sessions_app_entry")

    refused(delete_one)
    refused(delete_all)
    assert snapshot(session) == before


def test_it_refuses_deleting_the_session_row_through_the_orm(session):
    # Session.delete() cascades to the entries without marking the session as being deleted.
    before = snapshot(session)
    refused(session.delete)
    refused(lambda: Session.objects.filter(pk=session.pk).delete())
    assert Session.objects.filter(pk=session.pk).exists()
    assert snapshot(session) == before


def test_it_still_appends_after_refused_writes(session, alice):
    refused(lambda: Entry.objects.filter(session=session).update(raw="{}"))
    refused(lambda: Entry.objects.filter(session=session).delete())
    services.entry_append(session=session, payload=user("still works"), author=alice)
    assert_tree(session, expected=5)


def test_session_delete_removes_the_session_and_all_its_entries(session, other):
    bystander = snapshot(other)
    sessions_before, entries_before = counts()
    services.session_delete(session=session)
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert counts() == (sessions_before - 1, entries_before - 4)
    assert snapshot(other) == bystander
    # The guard is back for everybody else.
    refused(lambda: Entry.objects.filter(session=other).delete())


def test_session_delete_of_an_empty_session(alice):
    session = services.session_create(owner=alice)
    services.session_delete(session=session)
    assert not Session.objects.filter(pk=session.pk).exists()


# --- the `deleting` flag lets nothing through, TRUNCATE is refused (issue 19) ----------------


def _sql(*statements: str, params: list[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement, params if "%s" in statement else None)


def test_it_refuses_deleting_entries_of_a_session_marked_deleting_through_the_orm(session, other):
    before, bystander = snapshot(session), snapshot(other)
    Session.objects.filter(pk=session.pk).update(deleting=True)
    refused(lambda: Entry.objects.filter(session=session, seq=3).delete())
    refused(lambda: Entry.objects.filter(session=session).delete())
    refused(lambda: Entry.objects.filter(session=session).first().delete())  # type: ignore[union-attr]
    Session.objects.filter(pk=session.pk).update(deleting=False)
    assert snapshot(session) == before
    assert snapshot(other) == bystander


def test_it_refuses_deleting_entries_of_a_session_marked_deleting_through_sql(session):
    before = snapshot(session)
    mark = "UPDATE sessions_app_session SET deleting = %s WHERE id = %s"

    def flag_delete_unflag():  # all in one transaction, as an attacker would
        _sql(mark, params=[True, session.pk])
        _sql("DELETE FROM sessions_app_entry WHERE session_id = %s AND seq = 2", params=[session.pk])
        _sql(mark, params=[False, session.pk])

    refused(flag_delete_unflag)
    _sql(mark, params=[True, session.pk])
    refused(lambda: _sql("DELETE FROM sessions_app_entry WHERE session_id = %s", params=[session.pk]))
    refused(lambda: _sql("DELETE FROM sessions_app_entry"))
    assert snapshot(session) == before


def test_it_refuses_emptying_the_entry_table_at_once(session, other):
    # PostgreSQL's TRUNCATE skips row triggers; SQLite has none, its unqualified DELETE is the same.
    before, bystander = snapshot(session), snapshot(other)
    if connection.vendor == "postgresql":
        _sql("SET CONSTRAINTS ALL IMMEDIATE")  # as in a fresh transaction: no checks pending from the setup
        refused(lambda: _sql("TRUNCATE sessions_app_entry"))
        refused(lambda: _sql("TRUNCATE sessions_app_entry, sessions_app_session CASCADE"))
        refused(lambda: _sql("TRUNCATE sessions_app_session CASCADE"))
    else:
        refused(lambda: _sql("DELETE FROM sessions_app_entry"))
    assert snapshot(session) == before
    assert snapshot(other) == bystander


def test_it_lets_entries_go_only_once_their_session_row_is_gone(session, other):
    # The one order the trigger allows, which session_delete uses: the session row, then its
    # entries, in one transaction (foreign keys are checked at commit). That removes the whole
    # session, which verify_sessions reports unless it was deleted through session_delete.
    bystander = snapshot(other)
    with transaction.atomic():
        _sql("DELETE FROM sessions_app_session WHERE id = %s", params=[session.pk])
        _sql("DELETE FROM sessions_app_entry WHERE session_id = %s AND seq = 2", params=[session.pk])
        refused(lambda: _sql("DELETE FROM sessions_app_entry WHERE session_id = %s", params=[other.pk]))
        _sql("DELETE FROM sessions_app_entry WHERE session_id = %s", params=[session.pk])
    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert snapshot(other) == bystander


def test_the_guards_are_installed():
    # A table rebuild on SQLite (some migrations do one) drops the triggers silently.
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'sessions_app_entry'")
        else:
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'sessions_app_entry'::regclass AND NOT tgisinternal"
            )
        names = {row[0] for row in cursor.fetchall()}
    expected = {
        "sqlite": {"sessions_app_entry_no_update", "sessions_app_entry_no_delete"},
        "postgresql": {"sessions_app_entry_guard", "sessions_app_entry_no_truncate"},
    }[connection.vendor]
    assert expected <= names
