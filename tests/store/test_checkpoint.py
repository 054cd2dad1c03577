"""A big import on SQLite leaves its WAL checkpoint to a background thread (sessions_app/checkpoint.py)
and changes nothing else: the connection's automatic checkpoint comes back, a rejected file starts
no thread, and the checkpoint does copy everything into the database."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import Any

import pytest
from django.db import connection, transaction

from sessions_app import checkpoint, services
from sessions_app.errors import ImportRejected

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("_sessions_deleted_after")]


@pytest.fixture
def _sessions_deleted_after():
    yield
    from sessions_app.models import Session

    for session in Session.objects.all():
        services.session_delete(session=session)


@pytest.fixture
def runs(monkeypatch) -> list[str]:
    """Database paths the background checkpoint ran on; each run is joined before the test goes on."""
    paths: list[str] = []
    real = checkpoint.checkpoint

    def spy(path: str) -> None:
        assert threading.current_thread().name == checkpoint.THREAD_NAME
        real(path)
        paths.append(path)

    monkeypatch.setattr(checkpoint, "checkpoint", spy)
    return paths


@pytest.fixture
def pragmas_during_import(monkeypatch) -> list[tuple[int, int]]:
    """The connection's wal_autocheckpoint and cache_size seen inside the import's transaction."""
    seen: list[tuple[int, int]] = []
    real = services._imported

    def spy(*args: Any, **kwargs: Any) -> None:
        if connection.vendor == "sqlite":
            seen.append((autocheckpoint(), cache_size()))
        real(*args, **kwargs)

    monkeypatch.setattr(services, "_imported", spy)
    return seen


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
    alice, generated, settings, runs, pragmas_during_import
):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = 0
    data = generated(entries=300, seed=5)
    result = services.session_import(owner=alice, data=data)
    join_checkpoints()
    assert result.added == 300
    if connection.vendor != "sqlite":
        assert runs == []  # PostgreSQL checkpoints on its own: nothing to defer
        return
    # The commit itself did not checkpoint; the cache was the big write's.
    assert pragmas_during_import == [(0, -checkpoint.cache_kib(len(data)))]
    assert (autocheckpoint(), cache_size()) == (1000, -2000)  # and the connection is as it was
    assert runs == [str(connection.settings_dict["NAME"])]
    with contextlib.closing(sqlite3.connect(runs[0])) as db:
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == copied  # nothing left in the WAL that is not in the database


def test_a_rejected_file_starts_no_checkpoint_and_restores_the_connection(alice, settings, runs):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = 0
    with pytest.raises(ImportRejected):
        services.session_import(owner=alice, data=b'{"type":"session","version":3,"id":"x"}\nnot json\n')
    join_checkpoints()
    assert runs == []
    if connection.vendor == "sqlite":
        assert (autocheckpoint(), cache_size()) == (1000, -2000)


@pytest.mark.parametrize("case", ["small file", "outer transaction", "switched off"])
def test_nothing_changes_for_small_files_inside_transactions_or_when_off(
    alice, generated, settings, runs, pragmas_during_import, case
):
    settings.PIWEB_BACKGROUND_CHECKPOINT_BYTES = {"small file": 10**9, "outer transaction": 0, "switched off": -1}[case]
    data = generated(entries=50, seed=6)
    if case == "outer transaction":
        with transaction.atomic():
            services.session_import(owner=alice, data=data)
    else:
        services.session_import(owner=alice, data=data)
    join_checkpoints()
    assert runs == []
    if connection.vendor == "sqlite":
        assert pragmas_during_import == [(1000, -2000)]
