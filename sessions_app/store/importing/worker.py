"""Builds the entry rows of a new session's v3 file in a forked child process. Pure: no Django.

Why a process: a large import is CPU-bound Python (JSON, checks, previews, path states, chain
hashes) followed by database writes; in one process they share the GIL, so they cannot overlap.
Here this worker computes rows while the importing process writes them, one core each. The
importing process also completes each row with its chain hash (and keeps the session's running
digest, services._with_lines): that balances the two (with multi-row INSERTs, the writes take
less time than this worker's part).

Why fork: the child starts at once with the file's bytes already in memory (shared copy-on-write;
a 100 MB file is neither copied nor read again) and every module already imported.

Only the common case is done here: every line valid, every parent (and label target) before its
children, no repeated ids. On anything else the worker answers "fallback" and the importing
process parses the file itself (piformat.parse), which reports each problem with its line number;
the rows built here, once the importing process has completed them, are exactly the rows that path
would store (tests/store/test_import_worker.py).

Protocol: a pipe carries pickled messages:
("rows", [row, ...]), ("progress", bytes_read), then ("done", Summary) or ("fallback", reason).
A row (a list) holds its line as (start, end) offsets into the file, which the importing process
has too: the lines themselves (nearly all of the file) need not be pickled and piped. Its last
column, the chain hash, is None: the importing process fills it in.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

import orjson

from sessions_app.core.context import PathState, StateJson, advance_entry, state_json
from sessions_app.core.listing import Listing, storable, update_listing
from sessions_app.core.piformat import (
    MAX_ID_CHARS,
    MAX_SHORT_CHARS,
    MESSAGE_FIELDS,
    Limits,
    _lines,
    _parse_line,
    validate_entry,
)
from sessions_app.core.tree import parse_timestamp_ms, row_text

BATCH = 2000  # rows per message
FIRST_BATCH = 200  # smaller, so the importing process starts writing sooner
PROGRESS_EVERY = 1 << 20  # bytes


@dataclass(frozen=True, slots=True)
class Job:
    session_pk: int
    author_id: int | None
    created_at: Any  # the created_at column value, as the database adapter takes it
    limits: Limits
    start: int  # offset of the line after the header
    first_line: int  # the header's line number


@dataclass(slots=True)
class Summary:
    entries: int = 0
    leaf_id: str | None = None
    listing: Listing = field(default_factory=Listing)
    extra_headers: list[tuple[int, str]] = field(default_factory=list)  # (entries before it, raw line)
    private_mb: float = 0.0  # the worker's memory of its own at the end (not shared with its parent)


class Fallback(Exception):
    """The file needs the in-process parser (a problem to report, or an unusual order)."""


_Seen = tuple[str | None, int, PathState]  # parent id, depth, path state

_ROOT = PathState()
_ROW = list[Any]  # a list: the importing process puts in the line (for its offsets) and chain hash


def build(data: bytes, job: Job) -> Iterator[tuple[str, Any]]:
    """The messages for this file (see the module docstring); raises Fallback."""
    seen: dict[str, _Seen] = {}
    states: dict[int, StateJson] = {}
    summary = Summary()
    rows: list[_ROW] = []
    seq = 0
    pending = 0
    max_depth, max_line = job.limits.max_depth, job.limits.max_line_bytes
    view = memoryview(data)
    for number, start, end in _lines(data, job.start, job.first_line):
        pending += end - start + 1
        if pending >= PROGRESS_EVERY:
            yield "progress", pending
            pending = 0
        plain = _plain_message(data, view, start, end, max_depth, max_line)
        if plain is not None:
            obj, ts_ms = plain
            preview = row_text(obj)  # orjson refuses unpaired surrogates: storable() as it is
        else:  # anything but a well-formed message line: piformat's own checks
            chunk = data[start:end]
            obj, problem = _parse_line(chunk, number, job.limits)
            if problem is not None:
                raise Fallback(f"line {number}: {problem.message}")
            if obj is None:
                continue  # a blank line, skipped as piformat.parse does
            if obj.get("type") == "session":
                summary.extra_headers.append((seq, chunk.decode()))
                continue
            if (problem_text := validate_entry(obj)) is not None:
                raise Fallback(f"line {number}: {problem_text}")
            ts_ms = parse_timestamp_ms(obj["timestamp"]) or 0
            preview = storable(row_text(obj))
        kind = obj["type"]
        entry_id, parent_id = obj["id"], obj["parentId"]
        if entry_id in seen:
            raise Fallback(f"line {number}: repeated id")
        base = None
        if parent_id is not None:
            base = seen.get(parent_id)
            if base is None:
                raise Fallback(f"line {number}: parent not seen before")
        if kind == "label" and obj["targetId"] not in seen:
            raise Fallback(f"line {number}: label target not seen before")
        seq += 1
        message = obj.get("message") if kind == "message" else None
        role = message.get("role") if isinstance(message, dict) else None
        state = advance_entry(base[2] if base else _ROOT, kind, entry_id, obj)
        depth = base[1] + 1 if base else 0
        seen[entry_id] = (parent_id, depth, state)
        columns = state_json(states, state)
        timestamp = obj["timestamp"]
        rows.append(
            [
                job.session_pk, seq, entry_id, parent_id, kind, role if isinstance(role, str) else None,
                timestamp, ts_ms, (start, end), preview, depth,
                columns[1], columns[2], state.compaction_id,
                _kept_from(obj, parent_id, seen) if kind == "compaction" else None,
                job.author_id, job.created_at, None,  # chain hash: services._with_lines
            ]
        )  # fmt: skip
        update_listing(summary.listing, obj)
        summary.leaf_id = entry_id
        if len(rows) >= (BATCH if seq > BATCH else FIRST_BATCH):
            yield "rows", rows
            rows = []
    if rows:
        yield "rows", rows
    if pending:
        yield "progress", pending
    summary.entries = seq
    yield "done", summary


_MISSING: Any = object()


def _plain_message(
    data: bytes, view: memoryview, start: int, end: int, max_depth: int, max_line: int
) -> tuple[dict[str, Any], int] | None:
    """(object, timestamp in ms) if data[start:end] is a message entry validate_entry surely accepts.

    The common case, checked with a few type tests instead of the general rules. orjson refuses
    unpaired surrogates, so its strings need no well_formed check. (The line is read in place:
    no copy of it is made.)"""
    if end - start > max_line or data.count(b"{", start, end) + data.count(b"[", start, end) > max_depth:
        return None
    try:
        obj = orjson.loads(view[start:end])
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or obj.get("type") != "message":
        return None
    entry_id, parent_id, timestamp = obj.get("id"), obj.get("parentId", _MISSING), obj.get("timestamp")
    message = obj.get("message")
    if not (
        type(entry_id) is str
        and 0 < len(entry_id) <= MAX_ID_CHARS
        and (parent_id is None or (type(parent_id) is str and len(parent_id) <= MAX_ID_CHARS))
        and type(timestamp) is str
        and len(timestamp) <= MAX_SHORT_CHARS
        and type(message) is dict
    ):
        return None
    role = message.get("role")
    if type(role) is not str or len(role) > MAX_SHORT_CHARS:
        return None
    if role in _CONTENT_TYPES:  # MESSAGE_FIELDS' rules for these roles, inline
        kind = type(message.get("content"))
        sent = message.get("timestamp", 0)
        if kind not in _CONTENT_TYPES[role] or type(sent) not in (int, float):
            return None
    elif role in MESSAGE_FIELDS:
        return None  # rules this check does not know: validate_entry judges
    ts_ms = parse_timestamp_ms(timestamp)
    return None if ts_ms is None else (obj, ts_ms)


# The content types piformat.MESSAGE_FIELDS allows for the common roles (their only other rule:
# an optional numeric timestamp).
_CONTENT_TYPES = {"user": (str, list), "assistant": (list,), "toolResult": (list,)}


def _kept_from(obj: dict[str, Any], parent_id: str | None, seen: dict[str, _Seen]) -> str | None:
    """firstKeptEntryId if it names an ancestor of the compaction (services._kept_from)."""
    target = obj.get("firstKeptEntryId")
    if not isinstance(target, str) or target not in seen:
        return None
    target_depth = seen[target][1]
    node = parent_id
    while node is not None:
        if node == target:
            return target
        up, depth = seen[node][:2]
        if depth <= target_depth:
            return None
        node = up
    return None


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


def serve(data: bytes, job: Job, out: IO[bytes]) -> None:
    """Write build()'s messages to out, or ("fallback", reason)."""
    try:
        for message in build(data, job):
            if message[0] == "done":
                message[1].private_mb = private_mb()
            pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
    except Fallback as exc:
        pickle.dump(("fallback", str(exc)), out)
    except Exception as exc:  # anything unexpected: the in-process parser will judge the file
        pickle.dump(("fallback", f"worker error: {exc!r}"), out)
    out.flush()


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def forked_child(fd: int, job: Job, data: bytes, signal_mask: set[int | signal.Signals]) -> NoReturn:
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
