"""An import stages its rows in transactions that commit when another writer waits, invisible
until it publishes (pipeline.py): other writers never wait behind it, readers see it all or
nothing, and what a failed or stopped import leaves is deleted whole."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import Client
from django.utils import timezone

from sessions_app.access import permissions
from sessions_app.errors import ImportRejected, SessionNotFound
from sessions_app.models import Entry, Session
from sessions_app.store import integrity, selectors, services, writelock
from sessions_app.store.importing import pipeline, writing
from tests.store.helpers import assert_tree, export_bytes


def _lines(data: bytes) -> list[bytes]:
    return data.rstrip(b"\n").split(b"\n")


def _in_thread(work: Callable[[], Any], timeout: float = 10) -> Any:
    """work() on a connection of its own (it sees only what is committed); its result, or the
    exception it raised. Fails if it has not finished within timeout."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = work()
        except Exception as exc:
            out["value"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    started = time.monotonic()
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"waited {time.monotonic() - started:.1f} s behind the import"
    return out["value"]


def midway(check: Callable[[], None]) -> tuple[Callable[[int], None], list[bool]]:
    """A progress callback that runs check() once, while the import is between two batches."""
    done: list[bool] = []

    def progress(read: int) -> None:
        if not done and Entry.objects.exists():  # (this connection: rows of a batch are written)
            check()
            done.append(True)

    return progress, done


def _until(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.mark.django_db(transaction=True)
def test_a_new_session_is_invisible_until_published_and_writers_do_not_wait(alice, bob, generated):
    """Another user's append comes while the import holds what it wrote in a transaction: on
    SQLite it waits for the write lock, and the import commits and makes way at its next message.
    Meanwhile no reader sees the staging session."""
    other = services.session_create(owner=bob, name="bob's")
    data = generated(3000, seed=31)
    seen: dict[str, Any] = {}
    appended = threading.Event()

    def look() -> None:
        try:
            staged = Session.objects.get(staging=True)
            started = time.monotonic()
            # A write outside any transaction (Django's autocommit: no BEGIN), then one inside.
            User.objects.filter(pk=bob.pk).update(last_login=timezone.now())
            seen["autocommit_s"] = time.monotonic() - started
            started = time.monotonic()
            services.entry_append(session=other, payload={"type": "custom", "customType": "tick"}, author=bob)
            seen["append_s"] = time.monotonic() - started
            appended.set()
            seen["rows"] = Entry.objects.filter(session=staged).count()  # committed batches
            seen["listed"] = list(selectors.session_list_for_user(user=alice))
            try:
                permissions.session_get_for_user(user=alice, public_id=staged.public_id)
            except SessionNotFound:
                seen["get"] = "not found"
            seen["verified"] = [r.public_id for r in integrity.sessions_verify()]
            seen["public_id"] = staged.public_id
        finally:
            connections.close_all()

    looker = threading.Thread(target=look)
    joined: list[bool] = []

    def progress(read: int) -> None:
        if not looker.is_alive() and not appended.is_set() and Entry.objects.exists():  # (this connection's rows)
            looker.start()
            if connection.vendor == "sqlite":
                _until(lambda: writelock.waiting(connection))  # the append waits for the import's lock
        elif appended.is_set() and not joined:  # (the rest of look() only reads)
            looker.join(10)
            joined.append(not looker.is_alive())

    result = pipeline.session_import(owner=alice, data=data, builder="process", progress=progress)
    assert joined == [True]
    if connection.vendor == "sqlite":
        assert seen["rows"] > 0  # the import committed what it held when the writer came...
    assert seen["listed"] == [] and seen["get"] == "not found"  # ...and no reader saw the session
    assert seen["public_id"] not in seen["verified"]
    assert seen["autocommit_s"] < 1.0 and seen["append_s"] < 1.0  # other writers did not wait for the import
    assert result.added == 3000 and result.session.staging is None
    assert export_bytes(result.session) == data
    assert [s.pk for s in selectors.session_list_for_user(user=alice)] == [result.session.pk]
    assert Session.objects.count() == 2  # bob's and the import: nothing staged is left


@pytest.mark.django_db(transaction=True)
def test_a_reimport_stays_invisible_until_its_rows_are_copied_in(alice, generated, monkeypatch):
    data = generated(3000, seed=32)
    lines = _lines(data)
    first = b"\n".join(lines[:1000]) + b"\n"
    session = pipeline.session_import(owner=alice, data=first).session
    seen: dict[str, Any] = {}

    def check() -> None:
        def look() -> dict[str, Any]:
            stored = Session.objects.get(pk=session.pk)
            return {
                "stored": Entry.objects.filter(session=session).count(),
                "last_seq": stored.last_seq,
                "staged": Entry.objects.filter(session__staging=True).count(),
                "export": export_bytes(stored),
            }

        seen.update(_in_thread(look))

    progress, done = midway(check)
    monkeypatch.setattr(writing, "COMMIT_AFTER_S", 0)  # the first rows are committed when check() runs
    result = pipeline.session_import(owner=alice, data=data, progress=progress)
    assert done
    assert seen["staged"] > 0  # the new rows were being written, elsewhere...
    assert seen["stored"] == 999 and seen["last_seq"] == 999  # ...while readers saw the session as it was
    assert seen["export"] == first
    assert result.added == 2001 and not result.created
    assert export_bytes(Session.objects.get(pk=session.pk)) == data
    assert_tree(session, expected=3000)
    assert Session.objects.count() == 1  # the staging sibling is gone


@pytest.mark.django_db
def test_a_failed_import_is_deleted_whole(alice, generated):
    lines = _lines(generated(3000, seed=33))
    lines[2900] = b'{"type":"message","id":"broken"'
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record), pytest.raises(ImportRejected):
        pipeline.session_import(owner=alice, data=b"\n".join(lines) + b"\n", builder="process")
    assert any("INSERT" in s and "sessions_app_entry" in s for s in statements)  # batches were written
    deletes = [s for s in statements if s.startswith("DELETE") and "sessions_app_entry" in s]
    assert deletes[0] == "DELETE FROM sessions_app_entry WHERE session_id = %s"  # whole, never row by row
    assert all("session_id" in s and "entry_id" not in s for s in deletes)  # (then the session's cascade)
    assert Session.objects.count() == 0 and Entry.objects.count() == 0


@pytest.mark.django_db
def test_a_stopped_import_leaves_only_a_staging_session_that_the_janitor_deletes(alice, generated, monkeypatch):
    data = generated(500, seed=34)
    monkeypatch.setattr(writing, "COMMIT_AFTER_S", 0)  # rows were committed before the kill
    with monkeypatch.context() as patched:  # a kill: nothing after it runs
        patched.setattr(pipeline, "_discard", lambda stage, published=False: None)
        with pytest.raises(KeyboardInterrupt):
            pipeline.session_import(owner=alice, data=data, builder="process", progress=_interrupt)
    staged = Session.objects.get()
    assert staged.staging and Entry.objects.filter(session=staged).exists()
    assert list(selectors.session_list_for_user(user=alice)) == []
    with pytest.raises(SessionNotFound):
        permissions.session_get_for_user(user=alice, public_id=staged.public_id)
    assert services.staging_discard_stale() == 0  # still fresh: maybe alive
    assert services.staging_discard_stale(older_than_s=0) == 1
    assert Session.objects.count() == 0 and Entry.objects.count() == 0


@pytest.mark.django_db
def test_the_next_import_of_a_stopped_file_replaces_its_staging_session(alice, generated, monkeypatch, settings):
    data = generated(300, seed=35)
    monkeypatch.setattr(writing, "COMMIT_AFTER_S", 0)  # rows were committed before the kill
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "_discard", lambda stage, published=False: None)
        with pytest.raises(KeyboardInterrupt):
            pipeline.session_import(owner=alice, data=data, builder="process", progress=_interrupt)
    settings.PIWEB_IMPORT_STALE_SECONDS = 0
    result = pipeline.session_import(owner=alice, data=data)
    assert result.created and result.added == 300
    assert Session.objects.count() == 1 and export_bytes(result.session) == data


def _interrupt(read: int) -> None:
    raise KeyboardInterrupt


@pytest.mark.django_db
def test_lists_and_the_api_never_load_the_big_columns(alice, generated):
    pipeline.session_import(owner=alice, data=generated(20, seed=36))
    client = Client()
    client.force_login(alice)
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert client.get("/api/sessions").status_code == 200
        assert client.get("/").status_code == 200
    reads = [s for s in statements if "sessions_app_session" in s and s.lstrip().startswith("SELECT")]
    assert reads
    for big in ("extra_headers", "import_report", "header_raw"):
        assert not [s for s in reads if big in s], big


@pytest.mark.django_db(transaction=True)
def test_a_writer_waits_for_one_slice_of_a_long_message_not_all_of_it(alice, bob, generated):
    """Entries held for the end of the file (here every one: the root comes last) reach the writer
    as one message; a writer that waits gets in after the slice being written, not after them all."""
    lines = _lines(generated(3000, seed=36))
    data = b"\n".join([lines[0], *lines[2:], lines[1]]) + b"\n"
    other = services.session_create(owner=bob, name="bob's")
    seen: dict[str, Any] = {}
    finished = threading.Event()

    def append() -> None:
        try:
            started = time.monotonic()
            services.entry_append(session=other, payload={"type": "custom", "customType": "tick"}, author=bob)
            seen["append_s"], seen["import_finished"] = time.monotonic() - started, finished.is_set()
            seen["staged"] = Entry.objects.filter(session__staging=True).count()  # committed before it got in
        finally:
            connections.close_all()

    writer = threading.Thread(target=append)

    def first_insert(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "INTO sessions_app_entry" in sql and not writer.is_alive() and "append_s" not in seen:
            writer.start()
            if connection.vendor == "sqlite":
                _until(lambda: writelock.waiting(connection))  # it waits for the import's write lock
        return execute(sql, params, many, context)

    with connection.execute_wrapper(first_insert):
        result = pipeline.session_import(owner=alice, data=data, builder="process")
    finished.set()
    writer.join(10)
    assert result.added == 3000 and export_bytes(result.session) == data
    assert seen["append_s"] < 1.0 and seen["import_finished"] is False
    if connection.vendor == "sqlite":
        assert 0 < seen["staged"] < 3000  # the import made way after a slice of the message
