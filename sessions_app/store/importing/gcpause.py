"""Python's cyclic garbage collector held off around a bulk write.

A 100k-entry import allocates ~200k container objects (rows, their offsets) that are freed by
reference counting; none is part of a cycle. Each 700 allocations still start a collection, and
the full ones walk every object of the process: ~250 collections, 130-180 ms of a ~2 s import.
Collection is process-wide (a server's other threads meanwhile leave their cyclic garbage for
later), so it is held off only while rows are parsed and written, not while an import waits for a
lock; concurrent imports count: the collector resumes when the last one ends, and only if it was
running when the first began (a gc.enable() or gc.disable() elsewhere meanwhile is overridden).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
