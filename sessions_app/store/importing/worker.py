"""Builds the entry rows of a session file: in a forked child process, or in the importing one.

The steps are the import's own: piformat.read_entries reads and checks each line, core.intake
places each entry in the tree, store.rows.entry_row makes its row. build() runs them; the
importing process writes the rows (store/importing/pipeline.py). Pure: no Django.

Why a child process: reading, checking and placing 100k entries is CPU-bound Python, and so is
writing them; in one process they share the GIL. Here a forked child builds rows while the
importing process completes their chain hashes and writes them, one core each.

Why fork: the child starts at once with the file's mapping (filesource.Source: shared, a 100 MB
file is neither copied nor opened again) and every module already imported. Each process reads
the file a block at a time and lets go of the pages it read (bounded memory, both sides).

Protocol (a pipe of messages, send() and receive()): ("rows", [row, ...]), ("progress", bytes_read),
("pause", None) before the entries held for the end are placed, then ("done", Summary), or
("failed", reason) if the child could not finish (the importing process then builds the rows
itself). A row (a list in rows.COLUMNS order) holds a line of the file as its (start, end) offsets,
which the importing process has too: the lines (nearly all of the file) need not be piped; a line
migrated from v1/v2 comes as its bytes. Its chain hash is left to the importing process
(store.rows.hash_rows). Rows travel by marshal (lists of strings, numbers and None: written in half
the time pickle takes, on the build's critical path), anything else by pickle.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

from sessions_app.core.filesource import Source, as_source
from sessions_app.core.intake import Intake, StoredTree
from sessions_app.core.listing import Listed, Listing
from sessions_app.core.piformat import FileRefused, Header, Limits, Problem, read_entries
from sessions_app.store.rows import AT_OFFSETS, entry_row

# Rows per message. Each batch's rows, marshal's table of them and its output are made and freed
# in turn; at 2,000 rows they took fresh pages from the kernel each time (the worker's page faults:
# bench/bench_import_ab.py).
BATCH = 1000
FIRST_BATCH = 200  # smaller, so the importing process starts writing sooner


@dataclass(frozen=True, slots=True)
class Job:
    session_pk: int
    author_id: int | None
    created_at: Any  # the created_at column value, as the database adapter takes it
    limits: Limits
    header: Header  # where the lines to read start (after the header, or where a grown file grew)
    first_seq: int = 1


@dataclass(slots=True)
class Summary:
    placed: int = 0
    known: int = 0
    leaf_id: str | None = None
    listing: Listed = field(default_factory=Listing)
    extra_lines: list[tuple[int, str]] = field(default_factory=list)  # (seq of the entry before, line)
    problems: list[Problem] = field(default_factory=list)
    more_problems: int = 0  # past the problems listed
    refused: bool = False  # a problem that refuses the file whole was found: reading stopped there
    newlines: int = 0  # the file's newline count, from its start (the reader numbers every line)
    private_mb: float = 0.0  # the child's memory of its own at the end (not shared with its parent)


def build(
    file: bytes | Source, job: Job, *, stored: StoredTree | None = None, listing: Listed | None = None
) -> Iterator[tuple[str, Any]]:
    """The messages for this file (see the module docstring). stored and listing: the session's
    stored entries and listing fields, for a file imported again (in the importing process)."""
    data = as_source(file)
    intake = Intake(
        first_seq=job.first_seq, stored=stored, listing=listing if listing is not None else Listing(),
        max_extra_bytes=job.limits.max_extra_bytes, max_entries=job.limits.max_entries, reread=data.block,
    )  # fmt: skip
    states: dict[int, Any] = {}
    rows: list[list[Any]] = []
    read: list[int] = []
    last_line: list[int] = []

    session_pk, author_id, created_at = job.session_pk, job.author_id, job.created_at

    add, batch = intake.add, FIRST_BATCH
    try:
        for item in read_entries(data, job.header, job.limits, progress=read.append, last_line=last_line.append):
            placed = add(item)
            if placed is not None:
                rows.append(entry_row(placed, AT_OFFSETS, session_pk, author_id, created_at, states))
                if len(rows) >= batch:
                    yield "rows", rows
                    rows, batch = [], BATCH
            if read:
                yield "progress", sum(read)
                read.clear()
    except FileRefused as refused:
        yield "done", Summary(problems=[refused.problem], refused=True)
        return
    yield "pause", None  # (to the writer: placing held entries may take a while; nothing comes meanwhile)
    for placed in intake.finish():  # (held lines: read again by their offsets)
        rows.append(entry_row(placed, AT_OFFSETS, session_pk, author_id, created_at, states))
    if rows:
        yield "rows", rows
    if read:
        yield "progress", sum(read)
    yield (
        "done",
        Summary(
            intake.placed,
            intake.known,
            intake.leaf_id,
            intake.listing,
            intake.extra_lines,
            intake.problems,
            intake.more_problems,
            newlines=last_line[0] - (data.buffer[data.size - 1] != 10),  # (10: a last line with its newline)
        ),
    )


def private_mb() -> float:
    """This process's own memory: what it wrote since the fork (RSS would count the parent's
    pages it merely shares, the file's bytes among them). Read once, at the end: it costs a walk
    of the page tables (~7 ms), and the worker's memory only grows (batches are small)."""
    total = 0
    with contextlib.suppress(OSError), Path("/proc/self/smaps_rollup").open() as rollup:
        for line in rollup:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total / 1024


_ROWS, _PICKLED = b"r", b"p"  # a message's first byte: rows (their size and marshal's bytes follow), or a pickle


def send(message: tuple[str, Any], out: IO[bytes]) -> None:
    if message[0] == "rows":
        try:
            body = marshal.dumps(message[1])
        except ValueError:  # a value marshal does not write: PostgreSQL's created_at is a datetime
            pass
        else:
            out.write(_ROWS + len(body).to_bytes(8, "little"))
            out.write(body)
            return
    out.write(_PICKLED)
    pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)


def receive(source: IO[bytes]) -> tuple[str, Any]:
    """The next message send() wrote; EOFError at the end of the pipe, ValueError if it is not one."""
    kind = source.read(1)
    if kind == _PICKLED:
        message: tuple[str, Any] = pickle.load(source)
        return message
    if kind == _ROWS:
        size = int.from_bytes(_exactly(source, 8), "little")
        return "rows", marshal.loads(_exactly(source, size))
    if not kind:
        raise EOFError
    raise ValueError(f"not a message: starts with {kind!r}")


def _exactly(source: IO[bytes], size: int) -> bytes:
    data = source.read(size)
    if len(data) < size:
        raise EOFError
    return data


Serve = Callable[[Source, Job, IO[bytes]], None]


def serve(data: Source, job: Job, out: IO[bytes]) -> None:
    """Write build()'s messages to out, or ("failed", reason)."""
    try:
        for message in build(data, job):
            if message[0] == "done":
                message[1].private_mb = private_mb()
            send(message, out)
    except Exception as exc:  # anything unexpected: the importing process reads the file itself
        send(("failed", f"worker error: {exc!r}"), out)
    out.flush()


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def forked_child(
    fd: int, job: Job, data: Source, signal_mask: set[int | signal.Signals], serve: Serve = serve
) -> NoReturn:
    """The child's whole life after os.fork(): serve on fd, then leave without running any of the
    parent's cleanup (atexit, finalizers, its database connections).

    It starts with STOP_SIGNALS blocked (the parent blocks them around the fork), so a Ctrl-C
    cannot raise in it before this point and unwind into the parent's code; once their handlers
    are the default again (the parent's are not for it), signal_mask, the parent's, is restored."""
    code = 1
    try:
        gc.disable()  # first: ~100k small objects built and kept, collections would only cost time
        for number in STOP_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_SETMASK, signal_mask)
        # Keep no copy of the parent's sockets and files (a client's connection stays open as long
        # as any process holds it). The listing, not closerange: without the close_range syscall
        # (old kernels, some sandboxes) that would close every number up to the fd limit, one by one.
        for entry in list(Path("/proc/self/fd").iterdir()):  # (listed whole before any is closed)
            descriptor = int(entry.name)
            if descriptor > 2 and descriptor != fd:
                with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                    os.close(descriptor)
        with open(fd, "wb", buffering=1 << 16) as out:
            serve(data, job, out)
        code = 0
    finally:
        os._exit(code)
