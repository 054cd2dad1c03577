"""gcpause: the collector held off while any holder is inside, restored as it was."""

from __future__ import annotations

import gc
import threading

import pytest

from sessions_app.store.importing import gcpause


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_it_pauses_the_collector_and_resumes_it():
    gc.enable()
    with gcpause.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_resumes_when_the_last_of_overlapping_holders_leaves():
    gc.enable()
    first_in, first_may_leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gcpause.paused():
            first_in.set()
            first_may_leave.wait(5)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(5)
    with gcpause.paused():
        pass
    assert not gc.isenabled()  # the first holder is still inside
    first_may_leave.set()
    thread.join(5)
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with gcpause.paused():
        pass
    assert not gc.isenabled()


def test_an_exception_inside_still_resumes_it():
    gc.enable()
    with pytest.raises(RuntimeError), gcpause.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
