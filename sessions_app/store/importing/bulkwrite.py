"""Two process-wide settings that make a bulk write cheaper, each held only while one runs.

- gc_paused: Python's cyclic garbage collector held off. A 100k-entry import allocates ~200k
  container objects (rows, their offsets) that are freed by reference counting; none is part of
  a cycle. Each 700 allocations still start a collection, and the full ones walk every object of
  the process.
- sqlite_binding: identity adapters for the types an entry row binds that sqlite3 does not bind
  directly (None, bytes, memoryview). For those, sqlite3 looks for an adapter, and finds none only
  after a failed attribute lookup on its PrepareProtocol type, which formats an AttributeError
  message and throws it away. With an adapter that returns its argument it is one dict lookup,
  and what is bound does not change.

What each buys is measured by bench/bench_side_effects.py. Both are process-wide (a server's other
threads meanwhile leave their cyclic garbage for later; their sqlite3 parameters bind the same),
so each is held only while rows are parsed and written, not while an import waits for a lock.
Concurrent holders count: a setting goes back to how it was when the last one leaves.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any


class _Held:
    """A process-wide setting, on while at least one holder is inside."""

    def __init__(self, on: Callable[[], Any], off: Callable[[Any], None]) -> None:
        self._on, self._off = on, off
        self._lock = threading.Lock()
        self.holders = 0
        self._before: Any = None  # what on() returned: how it was before the first holder

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self.holders == 0:
                self._before = self._on()
            self.holders += 1
        try:
            yield
        finally:
            with self._lock:
                self.holders -= 1
                if self.holders == 0:
                    self._off(self._before)


def _gc_off() -> bool:
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def _gc_back(was_enabled: bool) -> None:
    if was_enabled:  # (a gc.enable() or gc.disable() elsewhere meanwhile is overridden)
        gc.enable()


_BOUND_AS_IS = (type(None), bytes, memoryview)


def _as_is(value: Any) -> Any:
    return value


def _adapters_on() -> list[type]:
    """Register the identity adapters that are missing; the types registered here."""
    added = [kind for kind in _BOUND_AS_IS if (kind, sqlite3.PrepareProtocol) not in sqlite3.adapters]
    for kind in added:
        sqlite3.register_adapter(kind, _as_is)
    return added


def _adapters_off(added: list[type]) -> None:
    for kind in added:
        sqlite3.adapters.pop((kind, sqlite3.PrepareProtocol), None)


gc_paused = _Held(_gc_off, _gc_back)
sqlite_binding = _Held(_adapters_on, _adapters_off)
