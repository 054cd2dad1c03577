"""bulkwrite: each setting held while any holder is inside, restored as it was."""

from __future__ import annotations

import gc
import sqlite3
import threading

import pytest

from sessions_app.store.importing import bulkwrite


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_it_pauses_the_collector_and_resumes_it():
    gc.enable()
    with bulkwrite.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_resumes_when_the_last_of_overlapping_holders_leaves():
    gc.enable()
    first_in, first_may_leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with bulkwrite.gc_paused():
            first_in.set()
            first_may_leave.wait(5)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(5)
    with bulkwrite.gc_paused():
        pass
    assert not gc.isenabled()  # the first holder is still inside
    first_may_leave.set()
    thread.join(5)
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with bulkwrite.gc_paused():
        pass
    assert not gc.isenabled()


def test_an_exception_inside_still_resumes_it():
    gc.enable()
    with pytest.raises(RuntimeError), bulkwrite.gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def _adapted() -> set[type]:
    return {kind for kind, proto in sqlite3.adapters if proto is sqlite3.PrepareProtocol}


def test_the_identity_adapters_are_there_only_while_held_and_bind_the_same():
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (v)")
    values = [None, b"\x00\xff", memoryview(b"line")]
    before = _adapted()
    with bulkwrite.sqlite_binding():
        assert {type(None), bytes, memoryview} <= _adapted()
        connection.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    assert _adapted() == before
    connection.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    stored = [row[0] for row in connection.execute("SELECT v FROM t ORDER BY rowid")]
    assert stored[:3] == stored[3:] == [None, b"\x00\xff", b"line"]


def test_an_adapter_registered_elsewhere_is_left_as_it_was():
    def mine(value: bytes) -> bytes:
        return value

    sqlite3.register_adapter(bytes, mine)
    try:
        with bulkwrite.sqlite_binding():
            assert sqlite3.adapters[(bytes, sqlite3.PrepareProtocol)] is mine
        assert sqlite3.adapters[(bytes, sqlite3.PrepareProtocol)] is mine
    finally:
        sqlite3.adapters.pop((bytes, sqlite3.PrepareProtocol), None)
