"""`piweb sync --watch`: follow the folders and push each appended line as it lands.

File events come from watchdog (inotify on Linux) when it is installed, else from polling the
files' size and mtime. Either way, the files marked changed are synced by one loop, so a file is
never pushed by two pushes at once; a push that fails because the server is away (restarting, the
network gone) leaves the file marked and is tried again with backoff. The precondition on every
push (the server's offset) makes a retry after a lost answer harmless: nothing is sent twice.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from piweb.cli import files
from piweb.cli.http import ApiError, Client, Offline
from piweb.cli.sync import Options, Outcome, sync_file

POLL_S = 0.2  # the polling fallback's interval (and how often the loop looks at marked files)
BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0)
CHANGES = frozenset({"created", "modified", "moved", "closed"})  # watchdog's event types that write


class _Marks:
    """Files to sync, marked by the watcher's thread and taken by the loop."""

    def __init__(self) -> None:
        self._paths: set[Path] = set()
        self._lock = threading.Lock()
        self.wake = threading.Event()

    def mark(self, path: Path) -> None:
        with self._lock:
            self._paths.add(path)
        self.wake.set()

    def take(self) -> set[Path]:
        with self._lock:
            paths, self._paths = self._paths, set()
        self.wake.clear()
        return paths


def _start_watchdog(roots: Sequence[Path], on_change: Callable[[Path], None]) -> Any | None:
    """A running watchdog observer, or None without watchdog (polling then)."""
    try:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:
        return None

    class Handler(FileSystemEventHandler):  # type: ignore[misc,unused-ignore]  # (Any when watchdog is missing)
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type not in CHANGES:  # opened, closed unwritten: our own reads among them
                return
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                name = raw.decode() if isinstance(raw, bytes) else raw
                if name.endswith(".jsonl"):
                    on_change(Path(name))

    observer = Observer()
    for root in roots:
        watched = root if root.is_dir() else root.parent
        watched.mkdir(parents=True, exist_ok=True)
        observer.schedule(Handler(), str(watched), recursive=True)
    observer.start()
    return observer


def _poll(roots: Sequence[Path], exclude: Sequence[str], seen: dict[Path, tuple[int, int]]) -> list[Path]:
    """Files whose size or mtime changed since the last look."""
    changed = []
    for _, path in files.session_files(roots, exclude):
        try:
            stat = path.stat()
        except OSError:
            continue
        key = (stat.st_size, stat.st_mtime_ns)
        if seen.get(path) != key:
            seen[path] = key
            changed.append(path)
    return changed


def watch(
    client: Client,
    roots: Sequence[Path],
    options: Options,
    exclude: Sequence[str] = (),
    report: Callable[[Outcome], None] = lambda o: None,
    stop: threading.Event | None = None,
    use_watchdog: bool = True,
) -> None:
    """Sync every file, then each file as it changes, until stop is set (or Ctrl+C)."""
    stop = stop or threading.Event()
    marks = _Marks()
    observer = _start_watchdog(roots, marks.mark) if use_watchdog else None
    how = "file events (watchdog)" if observer is not None else f"polling every {POLL_S}s"
    print(f"piweb sync: watching {len(roots)} folder(s) by {how}; Ctrl+C stops", file=sys.stderr, flush=True)
    seen: dict[Path, tuple[int, int]] = {}
    for path in _poll(roots, exclude, seen):
        marks.mark(path)
    failures = 0
    try:
        while not stop.is_set():
            if observer is None:
                for path in _poll(roots, exclude, seen):
                    marks.mark(path)
            for path in sorted(marks.take()):
                if not path.is_file() or any(files.excluded(r, path, exclude) for r in roots if _under(path, r)):
                    continue
                try:
                    report(sync_file(client, path, options))
                    failures = 0
                except (Offline, ApiError) as failed:
                    if isinstance(failed, ApiError) and failed.status < 500 and failed.status != 429:
                        report(Outcome(path, "failed", message=str(failed)))
                        continue
                    marks.mark(path)  # tried again after the backoff
                    delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                    failures += 1
                    print(f"piweb sync: server unreachable ({failed}); retrying in {delay}s", file=sys.stderr)
                    stop.wait(delay)
                    break
            marks.wake.wait(POLL_S)
    finally:
        if observer is not None:
            observer.stop()
            observer.join(timeout=2)


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
