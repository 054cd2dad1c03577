"""Entries are append-only: the database refuses every UPDATE and every single-entry DELETE,
whichever way it is issued. Only session_delete removes entries, and only a whole session's."""

from __future__ import annotations

from collections.abc import Callable

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
