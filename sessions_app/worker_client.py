"""Runs sessions_app.import_worker in a child process and hands its messages over as they come.

A thread reads the child's output while the caller writes rows to the database, so the child
never waits for the database; a bounded queue keeps at most a few batches in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessions_app.import_worker import Job

log = logging.getLogger(__name__)

_ROOT = str(Path(__file__).resolve().parent.parent)  # where the sessions_app package lives
_END = ("done", "fallback")
F_SETPIPE_SZ: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
COMMAND = [sys.executable, "-m", "sessions_app.import_worker"]


class WorkerRun:
    def __init__(self, job: Job, data: bytes) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)}
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=4)
        self.reader: threading.Thread | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            with tempfile.TemporaryFile() as file:  # unlinked at once; the worker reads its descriptor
                self.proc = subprocess.Popen(
                    [*COMMAND, str(file.fileno())],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=env,
                    cwd=_ROOT,
                    pass_fds=(file.fileno(),),
                )
                # Written while the worker starts up; it reads the file only once the job arrives.
                file.write(data)
                file.flush()
        except OSError as exc:  # no temp space, no process: the caller parses the file itself
            if self.proc is not None:  # started, but the file could not be written
                self.proc.kill()
                self.proc.communicate()
            self.proc = None
            self.queue.put(("fallback", f"the worker could not start: {exc}"))
            return
        # A pipe of 1 MiB instead of 64 KiB: the worker writes a whole batch ahead while this
        # process's reader thread waits for the GIL.
        assert self.proc.stdout is not None
        if F_SETPIPE_SZ is not None:
            with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: keep the default
                fcntl.fcntl(self.proc.stdout.fileno(), F_SETPIPE_SZ, 1 << 20)
        self.reader = threading.Thread(target=self._read, name="piweb-import-worker-reader", daemon=True)
        self.reader.start()
        assert self.proc.stdin is not None
        try:
            pickle.dump(job, self.proc.stdin)
            self.proc.stdin.close()
        except OSError as exc:  # the worker died early; _read reports it
            log.warning("import worker did not take the file: %s", exc)

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while True:
                message = pickle.load(self.proc.stdout)
                self.queue.put(message)
                if message[0] in _END:
                    return
        except EOFError:
            code = self.proc.wait()
            self.queue.put(("fallback", f"the worker exited (code {code}) before finishing"))
        except Exception as exc:  # unreadable output: treat like a crash
            self.queue.put(("fallback", f"unreadable worker output: {exc!r}"))

    def messages(self) -> Iterator[tuple[str, Any]]:
        while True:
            message = self.queue.get()
            yield message
            if message[0] in _END:
                return

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        # Unblock the reader if it waits on a full queue (the caller stopped early).
        while self.reader is not None and self.reader.is_alive():
            with contextlib.suppress(queue.Empty):
                self.queue.get(timeout=0.05)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
