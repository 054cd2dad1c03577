"""Large new files have their rows built by a forked child (store/importing/worker.py): the same
steps as in this process, run elsewhere. Both must store exactly the same, report the same
problems and progress, and a child that fails must hand the file back without leaving anything.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import json
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.forms.models import model_to_dict

from sessions_app.core.filesource import Source
from sessions_app.errors import ImportRejected
from sessions_app.models import Entry, Session
from sessions_app.store import rows, selectors, services
from sessions_app.store.importing import pipeline, worker
from sessions_app.store.importing.worker_client import WorkerRun
from tests.paths import HANDMADE, LARGE_SESSION

pytestmark = pytest.mark.django_db

SESSION_FIELDS = (
    "public_id", "header_raw", "extra_headers", "cwd", "created", "leaf_id", "name", "message_count",
    "first_message", "modified_ms", "last_seq", "entries_digest", "source_bytes", "source_sha256", "import_report",
)  # fmt: skip


def _snapshot(session: Session) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    session.refresh_from_db()
    fields = {k: v for k, v in model_to_dict(session).items() if k in SESSION_FIELDS}
    columns = [c for c in rows.COLUMNS if c not in ("session_id", "created_at")]
    stored = list(Entry.objects.filter(session=session).order_by("seq").values_list(*columns))
    return fields, stored


def _import_both_ways(user, data: bytes, **options: Any) -> tuple[Any, Any]:
    """The snapshot of the file imported with rows built in this process, then in a child."""
    result = pipeline.session_import(owner=user, data=data, builder="process", **options)
    assert result.built_by == "process"
    in_process = _snapshot(result.session)
    services.session_delete(session=result.session)
    result = pipeline.session_import(owner=user, data=data, builder="worker", **options)
    assert result.built_by == "worker"
    if not options.get("partial"):
        assert "".join(selectors.export_lines(session=result.session)).encode() == data
    return in_process, _snapshot(result.session)


@pytest.mark.parametrize(
    "options",
    [
        {"entries": 3000, "seed": 3, "branch_prob": 0.05, "compactions": 5, "labels": 40},
        {"entries": 1500, "seed": 4, "branch_prob": 0.0, "compactions": 3, "labels": 10},
        {"entries": 2000, "seed": 5, "branch_prob": 0.3, "compactions": 8, "labels": 60},
    ],
)
def test_the_worker_stores_what_this_process_stores(alice, generated, options):
    in_process, by_worker = _import_both_ways(alice, generated(**options))
    assert by_worker == in_process


@pytest.mark.parametrize("name", ["v3-shapes.jsonl", "v3-dup-header.jsonl", "v3-dup-flush.jsonl"])
def test_format_fixtures_come_out_the_same(alice, name):
    in_process, by_worker = _import_both_ways(alice, (HANDMADE / name).read_bytes())
    assert by_worker == in_process


def test_a_migrated_v1_file_comes_out_the_same(alice):
    data = LARGE_SESSION.read_bytes()
    result = pipeline.session_import(owner=alice, data=data, builder="process")
    in_process = _snapshot(result.session)
    services.session_delete(session=result.session)
    result = pipeline.session_import(owner=alice, data=data, builder="worker")
    assert result.built_by == "worker" and _snapshot(result.session) == in_process


def test_children_before_parents_come_out_the_same(alice, generated):
    lines = generated(300, seed=9).rstrip(b"\n").split(b"\n")
    data = b"\n".join([lines[0], *reversed(lines[1:])]) + b"\n"
    in_process, by_worker = _import_both_ways(alice, data)
    assert by_worker == in_process
    assert [row[0] for row in by_worker[1]] == list(range(1, 301))  # seqs in the file's order


def test_lone_surrogates_come_out_the_same(alice, generated):
    """JSON may escape half a UTF-16 pair (JSON.stringify of a string cut inside one): orjson
    refuses it, so such a line takes the standard parser; its preview replaces the half (a UTF-8
    database refuses it) while the line stays as written."""
    lines = generated(300, seed=21).rstrip(b"\n").split(b"\n")
    marked = []
    for number in (40, 41, 200):
        entry = json.loads(lines[number])
        if entry["type"] == "message" and isinstance(entry["message"].get("content"), str):
            entry["message"]["content"] = "cut \ud83d here " + entry["message"]["content"]
        else:
            entry["message"]["content"] = [{"type": "text", "text": "cut \ud83d here"}]
        lines[number] = json.dumps(entry).encode()
        marked.append(entry["id"])
    in_process, by_worker = _import_both_ways(alice, b"\n".join(lines) + b"\n")
    assert by_worker == in_process
    previews = dict(Entry.objects.filter(entry_id__in=marked).values_list("entry_id", "preview"))
    assert len(previews) == 3 and all("cut \ufffd here" in p for p in previews.values())


def _broken(generated) -> bytes:
    lines = generated(2500, seed=11).rstrip(b"\n").split(b"\n")
    lines[2400] = b'{"type":"message","id":"broken"'
    bad = json.loads(lines[1200])
    bad["timestamp"] = 5
    lines[1200] = json.dumps(bad).encode()
    return b"\n".join(lines) + b"\n"


def test_problems_are_reported_the_same_and_nothing_is_left(alice, generated):
    data = _broken(generated)
    errors = []
    for builder in ("process", "worker"):
        with pytest.raises(ImportRejected) as caught:
            pipeline.session_import(owner=alice, data=data, builder=builder)
        errors.append(caught.value.extra["errors"])
        assert Session.objects.count() == 0 and Entry.objects.count() == 0
    assert errors[0] == errors[1]
    reported = [e["line"] for e in errors[1]]
    assert reported[0] == 1201 and 2401 in reported  # (the entries below line 1201 lose their parent)


def test_a_partial_import_comes_out_the_same(alice, generated):
    in_process, by_worker = _import_both_ways(alice, _broken(generated), partial=True)
    assert by_worker == in_process
    assert in_process[0]["import_report"]


def test_a_session_written_after_its_entries_gets_the_id_autoincrement_would_give(alice, generated):
    """On SQLite a new session's id is reserved and its row written after the entries (see
    pipeline._row_reserved): ids still only grow, past those of deleted sessions, and the entries
    point at the row."""
    kept = services.session_create(owner=alice)
    gone = services.session_create(owner=alice)
    services.session_delete(session=gone)
    result = pipeline.session_import(owner=alice, data=generated(2500, seed=15), builder="worker")
    assert result.session.pk > gone.pk > kept.pk
    assert services.session_create(owner=alice).pk > result.session.pk
    assert Entry.objects.filter(session_id=result.session.pk).count() == result.added == 2500
    assert Session.objects.get(pk=result.session.pk).public_id == result.session.public_id
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA foreign_key_check")
            assert cursor.fetchall() == []


@pytest.mark.parametrize("builder", ["process", "worker"])
def test_a_file_with_many_blank_lines_before_its_header_imports_again_as_the_same_session(alice, generated, builder):
    """The header is the first non-blank line, however far down (the stored-session lookup once
    gave up after 20 lines, and a second import then retried itself forever)."""
    data = b"\n" * 25 + b"  \n" + generated(300, seed=16)
    first = pipeline.session_import(owner=alice, data=data, builder=builder)
    again = pipeline.session_import(owner=alice, data=data, builder=builder)
    assert first.created and first.added == 300
    assert not again.created and again.added == 0 and again.session.pk == first.session.pk
    assert Session.objects.filter(public_id=first.session.public_id).count() == 1


@pytest.mark.parametrize("builder", ["process", "worker"])
@pytest.mark.parametrize(
    "shape",
    ["plain", "no last newline", "blank lines around", "only the header", "header without newline", "grown", "v1"],
)
def test_the_stored_line_count_is_the_files_newline_count(alice, generated, builder, shape):
    """source_lines (a sync's line numbers go on from it) comes from the reader's numbering, not
    a second pass over the file: every shape of file ends with the newline count."""
    body = generated(200, seed=21)
    data = {
        "plain": body,
        "no last newline": body.rstrip(b"\n"),
        "blank lines around": b"\n\n  \n" + body + b"\n\n\n",
        "only the header": body.split(b"\n")[0] + b"\n",
        "header without newline": body.split(b"\n")[0],
        "grown": body,
        "v1": LARGE_SESSION.read_bytes(),
    }[shape]
    if shape == "grown":
        cut = data.index(b"\n", len(data) // 2) + 1
        pipeline.session_import(owner=alice, data=data[:cut], builder=builder)
        data += b"\n"  # (a blank line more: the new part counts its own lines too)
    result = pipeline.session_import(owner=alice, data=data, builder="process" if shape == "grown" else builder)
    result.session.refresh_from_db()
    assert (result.session.source_lines, result.session.source_bytes) == (data.count(b"\n"), len(data))


def test_progress_adds_up_to_the_same_either_way(alice, generated):
    data = generated(2500, seed=12)
    totals = []
    for builder in ("process", "worker"):
        steps: list[int] = []
        result = pipeline.session_import(owner=alice, data=data, progress=steps.append, builder=builder)
        totals.append(sum(steps))
        services.session_delete(session=result.session)
    assert totals[0] == totals[1] > len(data) * 0.99


@pytest.mark.parametrize("builder", ["process", "worker"])
def test_the_collector_is_held_off_while_rows_are_stored_and_resumes_after(alice, generated, builder):
    """bulkwrite's settings around the bulk phase (progress is reported from inside it), undone
    after, also when the file is rejected."""
    import gc
    import sqlite3

    from sessions_app.store.importing import bulkwrite

    def adapted() -> bool:
        return (type(None), sqlite3.PrepareProtocol) in sqlite3.adapters

    data = generated(2500, seed=14)
    assert gc.isenabled() and not adapted()
    during: list[tuple[bool, bool]] = []
    pipeline.session_import(
        owner=alice, data=data, progress=lambda n: during.append((gc.isenabled(), adapted())), builder=builder
    )
    assert during and set(during) == {(False, True)}
    assert gc.isenabled() and bulkwrite.gc_paused.holders == 0 and not adapted()
    broken = data.rstrip(b"\n") + b"\n{not json\n"
    with pytest.raises(ImportRejected):
        pipeline.session_import(owner=alice, data=broken, builder=builder)  # its new tail has a broken line
    assert gc.isenabled() and bulkwrite.gc_paused.holders == 0 and not adapted()


# --- a child that fails -------------------------------------------------------------------------


class Forks(list[int]):
    """A fork that notes the pids of the children it makes."""

    def __call__(self) -> int:
        pid = os.fork()
        if pid:
            self.append(pid)
        return pid


def _reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@contextlib.contextmanager
def entry_writes(on_write: Any) -> Iterator[None]:
    """Call on_write(rows) before each statement that writes entry rows (Django's execute wrapper)."""

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "INTO sessions_app_entry" in sql:
            on_write(len(params) if many else 1)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield


def test_a_child_that_dies_midway_leaves_the_file_to_this_process(alice, generated):
    def serve_then_die(data: Source, job: worker.Job, out: Any) -> None:
        for message in worker.build(data, job):  # the first rows and some progress go out, then it dies
            worker.send(message, out)
            out.flush()
            if message[0] == "progress":
                os.kill(os.getpid(), signal.SIGKILL)

    forks = Forks()
    written: list[int] = []
    steps: list[int] = []
    data = generated(2500, seed=14)
    run = functools.partial(WorkerRun, fork=forks, serve=serve_then_die)
    with entry_writes(written.append):
        result = pipeline.session_import(owner=alice, data=data, builder="worker", run=run, progress=steps.append)
    assert result.built_by == "process"
    assert written  # the child's first rows were written, then rolled back
    assert result.added == 2500 and Entry.objects.count() == 2500
    assert "".join(selectors.export_lines(session=result.session)).encode() == data
    assert len(forks) == 1 and _reaped(forks[0])
    back = steps.index(min(steps))  # the child's bytes are taken back before they are read again
    assert steps[back] == -sum(steps[:back]) < 0
    assert sum(steps) == sum(steps[back + 1 :]) > 0


def test_a_child_that_cannot_start_leaves_the_file_to_this_process(alice, generated):
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    run = functools.partial(WorkerRun, fork=no_fork)
    result = pipeline.session_import(owner=alice, data=generated(300, seed=18), builder="worker", run=run)
    assert result.built_by == "process" and result.added == 300


def test_a_child_stopped_early_is_killed_and_reaped(alice, generated):
    def serve_then_hang(data: Source, job: worker.Job, out: Any) -> None:
        first = next(worker.build(data, job))  # the first batch goes out whole...
        worker.send(first, out)
        out.flush()
        time.sleep(60)  # ...then the child works on (as on a long file)

    def failing_write(count: int) -> None:
        raise OperationalError("disk I/O error")

    forks = Forks()
    started = time.monotonic()
    run = functools.partial(WorkerRun, fork=forks, serve=serve_then_hang)
    with entry_writes(failing_write), pytest.raises(OperationalError):
        pipeline.session_import(owner=alice, data=generated(3000, seed=19), builder="worker", run=run)
    assert time.monotonic() - started < 20  # the child was killed, not waited for
    assert Session.objects.count() == 0 and Entry.objects.count() == 0
    assert len(forks) == 1 and _reaped(forks[0])


def test_the_child_holds_none_of_the_parents_files(alice, generated):
    """A client's socket stays open while any process holds it: the child closes all but its pipe."""
    seen: list[list[str]] = []

    def serve_and_report(data: Source, job: worker.Job, out: Any) -> None:
        worker.send(("fds", [path.name for path in Path("/proc/self/fd").iterdir()]), out)
        worker.serve(data, job, out)

    class Recording(WorkerRun):
        def messages(self) -> Iterator[tuple[str, Any]]:
            for message in super().messages():
                if message[0] == "fds":
                    seen.append(message[1])
                else:
                    yield message

    with tempfile.TemporaryFile() as held:  # a file the parent has open
        run = functools.partial(Recording, serve=serve_and_report)
        result = pipeline.session_import(owner=alice, data=generated(300, seed=20), builder="worker", run=run)
        held_fd = str(held.fileno())
    assert result.built_by == "worker"
    assert len(seen) == 1 and len(seen[0]) <= 5  # 0-2, the pipe, and the listing's own descriptor
    assert held_fd not in seen[0]


def test_small_files_and_known_sessions_do_not_start_a_worker(alice, settings, generated):
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 10_000_000
    assert pipeline.session_import(owner=alice, data=generated(200, seed=15)).built_by == "process"
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    again = pipeline.session_import(owner=alice, data=generated(200, seed=15))  # a re-import: nothing new
    assert again.built_by == "process"
    assert pipeline.session_import(owner=alice, data=generated(200, seed=16)).built_by == "worker"


def test_worker_rows_verify(alice, generated):
    from sessions_app.store import integrity

    result = pipeline.session_import(owner=alice, data=generated(1200, seed=17, branch_prob=0.1), builder="worker")
    assert result.built_by == "worker"
    assert integrity.session_verify(session=result.session) == []


def test_messages_come_through_the_pipe_as_they_were_sent():
    """Rows by marshal, a row marshal cannot write (PostgreSQL's created_at, a datetime) and
    everything else by pickle; the end of the pipe, cut or not, is EOFError."""
    when = datetime.datetime(2026, 12, 4, tzinfo=datetime.UTC)
    messages = [
        ("rows", [[1, 2, "a", None, "message", "user", "t", 5, (10, 20), "p", 0, '"off"', None, None, None, 3, "c"]]),
        ("rows", [[1, 3, "b", "a", "message", None, "t", 6, b'{"v":1}', "q", 1, '"off"', "m", None, None, 3, when]]),
        ("progress", 4096),
        ("pause", None),
        ("done", worker.Summary(placed=2, leaf_id="b", newlines=3)),
    ]
    pipe = io.BytesIO()
    for message in messages:
        worker.send(message, pipe)
    data = pipe.getvalue()
    assert data.startswith(b"r") and data.count(b"p\x80\x05") == 4  # marshal first, then pickles
    source = io.BufferedReader(io.BytesIO(data))
    assert [worker.receive(source) for _ in messages] == messages
    with pytest.raises(EOFError):
        worker.receive(source)
    with pytest.raises(EOFError):
        worker.receive(io.BufferedReader(io.BytesIO(data[:20])))
    with pytest.raises(ValueError, match="not a message"):
        worker.receive(io.BytesIO(b"garbage"))


def test_a_child_that_writes_garbage_leaves_the_file_to_this_process(alice, generated):
    def serve_garbage(data: Source, job: worker.Job, out: Any) -> None:
        out.write(b"{not a message}")

    run = functools.partial(WorkerRun, serve=serve_garbage)
    result = pipeline.session_import(owner=alice, data=generated(300, seed=21), builder="worker", run=run)
    assert result.built_by == "process" and result.added == 300
