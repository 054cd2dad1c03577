"""Forks sessions_app.store.importing.worker's child and hands its messages over as they come.

A thread reads the child's output while the caller writes rows to the database, so the child
never waits for the database; a bounded queue keeps at most a few batches in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import queue
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any

from sessions_app.core.filesource import Source
from sessions_app.store.importing import worker
from sessions_app.store.importing.worker import Job

log = logging.getLogger(__name__)

_END = ("done", "failed")
READER_GRACE_S = 5.0
IDLE_S = 0.05
F_SETPIPE_SZ: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
# Linux only: there fork() is cheap and safe for a child that runs pure Python and leaves with
# os._exit (macOS's system libraries are not fork-safe). Elsewhere files are parsed in process.
AVAILABLE = sys.platform == "linux"


# Python 3.12+ warns when a threaded process forks: a child could inherit a lock some other thread
# held. This child takes none: no logging, imports, database or I/O but its pipe. The filter holds
# for this module's own fork only (set once: catch_warnings() around each fork is not thread-safe).
warnings.filterwarnings(
    "ignore",
    message=r".*use of fork\(\) may lead to deadlocks",
    category=DeprecationWarning,
    module=re.escape(__name__),
)


class WorkerRun:
    """One child building one file's rows. fork and serve are what it forks with and what the
    child runs (tests pass others: a fork that fails, a child that dies midway)."""

    def __init__(
        self, job: Job, data: Source, *, fork: Callable[[], int] = os.fork, serve: worker.Serve = worker.serve
    ) -> None:
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=4)
        self.reader: threading.Thread | None = None
        self.pid: int | None = None
        self.output: IO[bytes] | None = None
        try:
            read_fd, write_fd = os.pipe()
        except OSError as exc:
            self.queue.put(("failed", f"the worker could not start: {exc}"))
            return
        # A pipe of 1 MiB instead of 64 KiB: the worker writes a whole batch ahead while this
        # process's reader thread waits for the GIL.
        if F_SETPIPE_SZ is not None:
            with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: keep the default
                fcntl.fcntl(write_fd, F_SETPIPE_SZ, 1 << 20)
        # Blocked in this thread across the fork, so the child starts with them blocked (see
        # worker.forked_child); this process's other threads still take them meanwhile.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, worker.STOP_SIGNALS)
        try:
            pid = fork()
        except OSError as exc:  # no process to spare: the caller parses the file itself
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(read_fd)
            os.close(write_fd)
            self.queue.put(("failed", f"the worker could not start: {exc}"))
            return
        if pid == 0:
            try:
                worker.forked_child(write_fd, job, data, mask, serve)
            finally:
                os._exit(1)  # (forked_child never returns: this only makes sure of it)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        self.pid = pid
        try:
            os.close(write_fd)
            self.output = os.fdopen(read_fd, "rb")  # closed in close()
            self.reader = threading.Thread(target=self._read, name="piweb-import-worker-reader", daemon=True)
            self.reader.start()
        except BaseException:  # no thread to spare, say: the child must not outlive this
            self.close()
            raise

    def _read(self) -> None:
        assert self.output is not None
        try:
            while True:
                message = worker.receive(self.output)
                self.queue.put(message)
                if message[0] in _END:
                    return
        except EOFError:
            self.queue.put(("failed", "the worker exited before finishing"))
        except Exception as exc:  # unreadable output: treat like a crash
            self.queue.put(("failed", f"unreadable worker output: {exc!r}"))

    def messages(self) -> Iterator[tuple[str, Any]]:
        """The child's messages, and ("idle", None) every IDLE_S the child sends none (the
        writer may let another writer in meanwhile)."""
        while True:
            try:
                message = self.queue.get(timeout=IDLE_S)
            except queue.Empty:
                yield "idle", None
                continue
            yield message
            if message[0] in _END:
                return

    def close(self) -> None:
        if self.pid is None:
            return
        # Done or not, the child goes (a finished one is a zombie: the signal does nothing) and is
        # reaped here, and only here, so its pid cannot be reused before the kill.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped by someone else (SIGCHLD ignored, a waitpid(-1) loop)
            status = 0
        self.pid = None
        if os.waitstatus_to_exitcode(status) not in (0, -signal.SIGKILL):
            log.warning("import worker exited with status %s", os.waitstatus_to_exitcode(status))
        # Unblock the reader if it waits on a full queue (the caller stopped early). It ends at
        # the pipe's end, which the dead child closed; bounded all the same, should some other
        # process have inherited the write end.
        deadline = time.monotonic() + READER_GRACE_S
        while self.reader is not None and self.reader.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                self.queue.get(timeout=0.05)
        if self.reader is not None and self.reader.is_alive():
            log.warning("import worker's reader still waits for the end of its pipe; left to finish")
        elif self.output is not None:
            self.output.close()
