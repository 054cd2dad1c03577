"""A big import on SQLite leaves its WAL checkpoint to a background thread (sessions_app/checkpoint.py)
and changes nothing else: the connection's automatic checkpoint comes back, a rejected file starts
no thread, and the checkpoint does copy everything into the database."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.utils import ConnectionHandler

from sessions_app.errors import ImportRejected
from sessions_app.store import checkpoint, services
from sessions_app.store.importing import pipeline

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("_sessions_deleted_after")]


@pytest.fixture
def _sessions_deleted_after():
    yield
    from sessions_app.models import Session

    for session in Session.objects.all():
        services.session_delete(session=session)


@pytest.fixture
def all_runs(monkeypatch) -> list[tuple[str, str]]:
    """(thread name, database path) of every background checkpoint: after an import or the watcher's."""
    seen: list[tuple[str, str]] = []
    real = checkpoint.checkpoint

    def spy(path: str) -> None:
        real(path)
        seen.append((threading.current_thread().name, path))

    monkeypatch.setattr(checkpoint, "checkpoint", spy)
    return seen


@pytest.fixture
def runs(all_runs) -> Callable[[], list[str]]:
    """The database paths of the checkpoints run after imports (not the watcher's), so far."""
    return lambda: [path for name, path in all_runs if name == checkpoint.THREAD_NAME]


@pytest.fixture
def pragmas_before() -> tuple[int, int]:
    """The connection's own wal_autocheckpoint and cache_size, before the test's import."""
    return (autocheckpoint(), cache_size()) if connection.vendor == "sqlite" else (0, 0)


class PragmaLog(list[tuple[int, int]]):
    """A progress callback that notes the connection's wal_autocheckpoint and cache_size the
    first time the import reports (inside its transaction)."""

    def __call__(self, _read: int) -> None:
        if connection.vendor == "sqlite" and not self:
            self.append((autocheckpoint(), cache_size()))


@pytest.fixture
def pragmas_during_import() -> PragmaLog:
    return PragmaLog()


@pytest.mark.parametrize(("size", "kib"), [(0, 16384), (100 * 2**20, 16384), (300 * 2**20, 38400), (2**31, 65536)])
def test_the_page_cache_grows_with_the_write_within_bounds(size, kib):
    assert checkpoint.cache_kib(size) == kib


def autocheckpoint() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return int(cursor.fetchone()[0])


def cache_size() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        return int(cursor.fetchone()[0])


def join_checkpoints() -> None:
    for thread in threading.enumerate():
        if thread.name == checkpoint.THREAD_NAME:
            thread.join(timeout=30)


def test_a_big_import_commits_without_checkpointing_and_a_thread_does_it(
    alice, generated, settings, runs, pragmas_before, pragmas_during_import
):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = 0
    data = generated(entries=300, seed=5)
    result = pipeline.session_import(owner=alice, data=data, progress=pragmas_during_import)
    join_checkpoints()
    assert result.added == 300
    if connection.vendor != "sqlite":
        assert runs() == []  # PostgreSQL checkpoints on its own: nothing to defer
        return
    # The commit itself did not checkpoint; the cache was the big write's.
    assert pragmas_during_import == [(0, -checkpoint.cache_kib(len(data)))]
    assert (autocheckpoint(), cache_size()) == pragmas_before  # and the connection is as it was
    assert runs() == [str(connection.settings_dict["NAME"])]
    with contextlib.closing(sqlite3.connect(runs()[0])) as db:
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == copied  # nothing left in the WAL that is not in the database


def test_a_rejected_file_starts_no_checkpoint_and_restores_the_connection(alice, settings, runs, pragmas_before):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = 0
    with pytest.raises(ImportRejected):
        pipeline.session_import(owner=alice, data=b'{"type":"session","version":3,"id":"x"}\nnot json\n')
    join_checkpoints()
    assert runs() == []
    if connection.vendor == "sqlite":
        assert (autocheckpoint(), cache_size()) == pragmas_before


@pytest.mark.parametrize("case", ["small file", "outer transaction", "switched off"])
def test_nothing_changes_for_small_files_inside_transactions_or_when_off(
    alice, generated, settings, runs, pragmas_before, pragmas_during_import, case
):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = {"small file": 10**9, "outer transaction": 0, "switched off": -1}[case]
    data = generated(entries=50, seed=6)
    if case == "outer transaction":
        with transaction.atomic():
            pipeline.session_import(owner=alice, data=data, progress=pragmas_during_import)
    else:
        pipeline.session_import(owner=alice, data=data, progress=pragmas_during_import)
    join_checkpoints()
    assert runs() == []
    if connection.vendor == "sqlite":
        assert pragmas_during_import == [pragmas_before]


# --- the watcher: every other write's checkpoint, off the commit path ----------------------------


def _sqlite_file(path: str, interval_ms: int, settings) -> Any:
    """A Django connection to a new SQLite database file at path (whatever the default database is)."""
    settings.PIWEB_WAL_CHECKPOINT_MS = interval_ms
    options = {"init_command": "PRAGMA journal_mode=WAL;"}
    handler = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": options}}
    )
    db = handler["default"]
    db.ensure_connection()  # connection_created: the receiver under test runs here
    return db


def test_a_database_file_gets_a_watcher_that_checkpoints_what_is_written(tmp_path, settings, all_runs):
    db = _sqlite_file(str(tmp_path / "w.sqlite3"), 50, settings)
    try:
        raw = db.connection
        assert raw.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == checkpoint.SAFETY_NET_PAGES
        path = str((tmp_path / "w.sqlite3").resolve())
        assert path in checkpoint._watched
        raw.execute("CREATE TABLE t (x TEXT)")
        raw.execute("BEGIN")
        raw.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 200)
        raw.execute("COMMIT")
        committed = len(all_runs)
        deadline = time.monotonic() + 10
        while (checkpoint.WATCH_THREAD_NAME, path) not in all_runs[committed:] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (checkpoint.WATCH_THREAD_NAME, path) in all_runs[committed:]
        # Copied into the database file: a reader without the WAL sees the rows.
        with contextlib.closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as reader:
            assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 200
        # Nothing written since: the watcher leaves the WAL alone.
        runs_so_far = len(all_runs)
        time.sleep(0.3)
        assert [r for r in all_runs[runs_so_far:] if r[1] == path] == []
        # A second connection to the same file starts no second watcher.
        watchers = [t for t in threading.enumerate() if t.name == checkpoint.WATCH_THREAD_NAME]
        other = _sqlite_file(str(tmp_path / "w.sqlite3"), 50, settings)
        other.close()
        assert [t for t in threading.enumerate() if t.name == checkpoint.WATCH_THREAD_NAME] == watchers
    finally:
        db.close()


def test_no_watcher_when_switched_off_or_in_memory(tmp_path, settings):
    db = _sqlite_file(str(tmp_path / "off.sqlite3"), 0, settings)
    try:
        assert db.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # SQLite's own
        assert str((tmp_path / "off.sqlite3").resolve()) not in checkpoint._watched
    finally:
        db.close()
    memory = _sqlite_file(":memory:", 50, settings)
    try:
        assert memory.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    finally:
        memory.close()
