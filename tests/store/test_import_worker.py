"""Large new files are imported with rows built by a worker process (services._import_in_worker).

The worker must store exactly what the in-process parser stores, and hand every file it does not
take (problems, unusual order, a crash) back to it without leaving anything behind.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.forms.models import model_to_dict

from sessions_app.errors import ImportRejected
from sessions_app.models import Entry, Session
from sessions_app.store import entry_insert, selectors, services
from sessions_app.store.importing import worker, worker_client
from tests.paths import HANDMADE, LARGE_SESSION

pytestmark = pytest.mark.django_db

SESSION_FIELDS = (
    "public_id", "header_raw", "extra_headers", "cwd", "created", "leaf_id", "name", "message_count",
    "first_message", "modified_ms", "last_seq", "entries_digest", "source_bytes", "source_sha256", "import_report",
)  # fmt: skip


@pytest.fixture
def outcomes(monkeypatch) -> list[Any]:
    """What each _import_in_worker call returned (a result: the worker stored the rows)."""
    seen: list[Any] = []
    original = services._import_in_worker

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(services, "_import_in_worker", spy)
    return seen


def _snapshot(session: Session) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    session.refresh_from_db()
    fields = {k: v for k, v in model_to_dict(session).items() if k in SESSION_FIELDS}
    columns = [c for c in entry_insert.COLUMNS if c not in ("session_id", "created_at")]
    rows = list(Entry.objects.filter(session=session).order_by("seq").values_list(*columns))
    return fields, rows


def _import_both_ways(user, data: bytes, settings, outcomes: list[Any]) -> tuple[Any, Any]:
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = -1
    result = services.session_import(owner=user, data=data)
    assert outcomes == []
    in_process = _snapshot(result.session)
    services.session_delete(session=result.session)
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    result = services.session_import(owner=user, data=data)
    return in_process, _snapshot(result.session)


@pytest.mark.parametrize(
    "options",
    [
        {"entries": 3000, "seed": 3, "branch_prob": 0.05, "compactions": 5, "labels": 40},
        {"entries": 1500, "seed": 4, "branch_prob": 0.0, "compactions": 3, "labels": 10},
        {"entries": 2000, "seed": 5, "branch_prob": 0.3, "compactions": 8, "labels": 60},
    ],
)
def test_the_worker_stores_what_the_in_process_parser_stores(alice, settings, generated, outcomes, options):
    data = generated(**options)
    in_process, by_worker = _import_both_ways(alice, data, settings, outcomes)
    assert len(outcomes) == 1 and isinstance(outcomes[0], services.ImportResult)  # the worker did it
    assert by_worker == in_process
    assert "".join(selectors.export_lines(session=outcomes[0].session)).encode() == data


@pytest.mark.parametrize("name", ["v3-shapes.jsonl", "v3-dup-header.jsonl"])
def test_format_fixtures_come_out_the_same(alice, settings, outcomes, name):
    data = (HANDMADE / name).read_bytes()
    in_process, by_worker = _import_both_ways(alice, data, settings, outcomes)
    assert isinstance(outcomes[0], services.ImportResult)
    assert by_worker == in_process
    assert "".join(selectors.export_lines(session=outcomes[0].session)).encode() == data


def test_the_real_large_session_is_migrated_in_process(alice, settings, outcomes):
    data = LARGE_SESSION.read_bytes()  # a v1 file: migration needs every line at once
    in_process, by_worker = _import_both_ways(alice, data, settings, outcomes)
    assert outcomes == [None]
    assert by_worker == in_process


def test_repeated_lines_are_handed_back_and_still_import_the_same(alice, settings, outcomes):
    # pi's lazy flush can write entries twice (v3-dup-flush): the worker leaves that to the parser.
    in_process, by_worker = _import_both_ways(alice, (HANDMADE / "v3-dup-flush.jsonl").read_bytes(), settings, outcomes)
    assert outcomes == [None]
    assert by_worker == in_process


def test_children_before_parents_are_handed_back(alice, settings, outcomes, generated):
    lines = generated(300, seed=9).rstrip(b"\n").split(b"\n")
    data = b"\n".join([lines[0], *reversed(lines[1:])]) + b"\n"
    in_process, by_worker = _import_both_ways(alice, data, settings, outcomes)
    assert outcomes == [None]
    assert by_worker == in_process


def test_lone_surrogates_come_out_the_same(alice, settings, outcomes, generated):
    """JSON may escape half a UTF-16 pair (JSON.stringify of a string cut inside one): orjson
    refuses it, so the worker's own parser never sees one; the line takes piformat's path, whose
    preview replaces the half (a UTF-8 database refuses it) while the line stays as written."""
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
    data = b"\n".join(lines) + b"\n"
    in_process, by_worker = _import_both_ways(alice, data, settings, outcomes)
    assert isinstance(outcomes[0], services.ImportResult)  # the worker took the file
    assert by_worker == in_process
    previews = dict(Entry.objects.filter(entry_id__in=marked).values_list("entry_id", "preview"))
    assert len(previews) == 3 and all("cut \ufffd here" in p for p in previews.values())
    assert "".join(selectors.export_lines(session=outcomes[0].session)).encode() == data


def test_a_bad_line_is_reported_as_without_the_worker_and_nothing_is_left(alice, settings, outcomes, generated):
    lines = generated(2500, seed=11).rstrip(b"\n").split(b"\n")
    lines[2400] = b'{"type":"message","id":"broken"'
    bad = json.loads(lines[1200])
    bad["timestamp"] = 5
    lines[1200] = json.dumps(bad).encode()
    data = b"\n".join(lines) + b"\n"
    errors = []
    for threshold in (-1, 0):
        settings.PIWEB_IMPORT_WORKER_MIN_BYTES = threshold
        with pytest.raises(ImportRejected) as caught:
            services.session_import(owner=alice, data=data)
        errors.append(caught.value.extra["errors"])
        assert Session.objects.count() == 0 and Entry.objects.count() == 0
    assert outcomes == [None]
    assert errors[0] == errors[1]
    reported = [e["line"] for e in errors[1]]
    assert reported[0] == 1201 and 2401 in reported  # (the entries below line 1201 lose their parent)


def test_a_session_written_after_its_entries_gets_the_id_autoincrement_would_give(alice, settings, outcomes, generated):
    """On SQLite the worker path reserves the session's id and writes its row after the entries
    (see _next_session_pk): ids still only grow, past those of deleted sessions, and the entries
    point at the row."""
    from django.db import connection

    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    kept = services.session_create(owner=alice)
    gone = services.session_create(owner=alice)
    services.session_delete(session=gone)
    result = services.session_import(owner=alice, data=generated(2500, seed=15))
    assert isinstance(outcomes[0], services.ImportResult)  # the worker's path
    assert result.session.pk > gone.pk > kept.pk
    assert services.session_create(owner=alice).pk > result.session.pk
    assert Entry.objects.filter(session_id=result.session.pk).count() == result.added == 2500
    assert Session.objects.get(pk=result.session.pk).public_id == result.session.public_id
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA foreign_key_check")
            assert cursor.fetchall() == []


@pytest.mark.parametrize("threshold", [-1, 0])
def test_a_file_with_many_blank_lines_before_its_header_imports_again_as_the_same_session(
    alice, settings, generated, threshold
):
    """The header is the first non-blank line, however far down (the stored-session lookup once
    gave up after 20 lines, and a second import then retried itself forever)."""
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = threshold
    data = b"\n" * 25 + b"  \n" + generated(300, seed=16)
    first = services.session_import(owner=alice, data=data)
    again = services.session_import(owner=alice, data=data)
    assert first.created and first.added == 300
    assert not again.created and again.added == 0 and again.session.pk == first.session.pk
    assert Session.objects.filter(public_id=first.session.public_id).count() == 1


def test_progress_adds_up_to_what_the_parser_reports(alice, settings, outcomes, generated):
    data = generated(2500, seed=12)
    totals = []
    for threshold in (-1, 0):
        settings.PIWEB_IMPORT_WORKER_MIN_BYTES = threshold
        steps: list[int] = []
        result = services.session_import(owner=alice, data=data, progress=steps.append)
        totals.append(sum(steps))
        services.session_delete(session=result.session)
    assert totals[0] == totals[1] > len(data) * 0.99


def test_progress_taken_back_when_the_file_is_handed_back(alice, settings, outcomes, generated):
    lines = generated(2500, seed=13).rstrip(b"\n").split(b"\n")
    lines[-1] = b"{not json"
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    steps: list[int] = []
    with pytest.raises(ImportRejected):
        services.session_import(owner=alice, data=b"\n".join(lines) + b"\n", progress=steps.append)
    back = steps.index(min(steps))  # the worker's bytes are taken back before the parser reports its own
    assert steps[back] == -sum(steps[:back]) < 0
    assert sum(steps) == sum(steps[back + 1 :]) > 0


@pytest.mark.parametrize("threshold", [-1, 0])  # parsed in process; rows built by the worker
def test_the_collector_is_held_off_while_rows_are_stored_and_resumes_after(
    alice, settings, outcomes, generated, threshold
):
    """gcpause around the bulk phase (progress is reported from inside it), resumed after, also when
    the file is rejected."""
    import gc

    from sessions_app.store.importing import gcpause

    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = threshold
    data = generated(2500, seed=14)
    assert gc.isenabled()
    during: list[bool] = []
    services.session_import(owner=alice, data=data, progress=lambda n: during.append(gc.isenabled()))
    assert during and not any(during)
    assert gc.isenabled() and gcpause._holders == 0
    broken = data.rstrip(b"\n") + b"\n{not json\n"
    with pytest.raises(ImportRejected):
        services.session_import(owner=alice, data=broken)  # its new tail has a broken line
    assert gc.isenabled() and gcpause._holders == 0


@pytest.fixture
def children(monkeypatch) -> list[int]:
    """The pids of the workers forked."""
    pids: list[int] = []
    real_fork = worker_client._fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(worker_client, "_fork", fork)
    return pids


def _reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_worker_that_dies_midway_leaves_the_file_to_the_parser(
    alice, settings, outcomes, generated, monkeypatch, children
):
    real_serve = worker.serve

    def serve_then_die(data: bytes, job: worker.Job, out: Any) -> None:
        class Dying:  # passes the first batches of rows on, then the process is killed
            def __init__(self) -> None:
                self.sent = 0

            def write(self, chunk: bytes) -> int:
                self.sent += 1
                if self.sent > 3:
                    out.flush()
                    os.kill(os.getpid(), signal.SIGKILL)
                return int(out.write(chunk))

            def flush(self) -> None:
                out.flush()

        dying: Any = Dying()
        real_serve(data, job, dying)

    monkeypatch.setattr(worker, "serve", serve_then_die)  # the child is a fork: it has the patch
    written: list[int] = []
    with_lines = services._with_lines

    def counting(rows: list[Any], *args: Any) -> str:
        written.append(len(rows))
        return with_lines(rows, *args)

    monkeypatch.setattr(services, "_with_lines", counting)
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    data = generated(2500, seed=14)
    result = services.session_import(owner=alice, data=data)
    assert outcomes == [None]
    assert written and sum(written) < 2500  # the worker's first rows were written, then rolled back
    assert result.added == 2500 and Entry.objects.count() == 2500
    assert "".join(selectors.export_lines(session=result.session)).encode() == data
    assert len(children) == 1 and _reaped(children[0])


def test_a_worker_that_cannot_start_leaves_the_file_to_the_parser(alice, settings, outcomes, generated, monkeypatch):
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(worker_client, "_fork", no_fork)
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    result = services.session_import(owner=alice, data=generated(300, seed=18))
    assert outcomes == [None]
    assert result.added == 300


def test_a_worker_stopped_early_is_killed_and_reaped(alice, settings, outcomes, generated, monkeypatch, children):
    def serve_then_hang(data: bytes, job: worker.Job, out: Any) -> None:
        first = next(worker.build(data, job))  # the first batch goes out whole...
        pickle.dump(first, out)
        out.flush()
        time.sleep(60)  # ...then the child works on (as on a long file)

    def failing_write(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(worker, "serve", serve_then_hang)
    monkeypatch.setattr(services, "_with_lines", failing_write)  # the first rows fail to be written
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    started = time.monotonic()
    with pytest.raises(OperationalError):
        services.session_import(owner=alice, data=generated(3000, seed=19))
    assert time.monotonic() - started < 20  # the child was killed, not waited for
    assert Session.objects.count() == 0 and Entry.objects.count() == 0
    assert len(children) == 1 and _reaped(children[0])


def test_the_worker_holds_none_of_the_parents_files(alice, settings, outcomes, generated, monkeypatch):
    """A client's socket stays open while any process holds it: the child closes all but its pipe."""
    seen: list[list[str]] = []
    real_serve = worker.serve

    def serve_and_report(data: bytes, job: worker.Job, out: Any) -> None:
        fds = [path.name for path in Path("/proc/self/fd").iterdir()]
        real_serve(data, job, out)
        pickle.dump(("fds", fds), out)  # read back by the test's own reader, after "done"

    monkeypatch.setattr(worker, "serve", serve_and_report)
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    with tempfile.TemporaryFile() as held:  # a file the parent has open
        real_read = worker_client.WorkerRun._read

        def read(self: worker_client.WorkerRun) -> None:
            real_read(self)
            assert self.output is not None
            seen.append(pickle.load(self.output)[1])

        monkeypatch.setattr(worker_client.WorkerRun, "_read", read)
        services.session_import(owner=alice, data=generated(300, seed=20))
        held_fd = str(held.fileno())
    assert isinstance(outcomes[0], services.ImportResult)
    assert len(seen) == 1 and len(seen[0]) <= 5  # 0-2, the pipe, and the listing's own descriptor
    assert held_fd not in seen[0]


def test_small_files_and_known_sessions_do_not_start_a_worker(alice, settings, outcomes, generated):
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 10_000_000
    services.session_import(owner=alice, data=generated(200, seed=15))
    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    services.session_import(owner=alice, data=generated(200, seed=15))  # a re-import: nothing new
    services.session_import(owner=alice, data=generated(200, seed=16), partial=True)
    assert outcomes == []


def test_worker_rows_verify(alice, settings, generated, outcomes):
    from sessions_app.store import integrity

    settings.PIWEB_IMPORT_WORKER_MIN_BYTES = 0
    result = services.session_import(owner=alice, data=generated(1200, seed=17, branch_prob=0.1))
    assert isinstance(outcomes[0], services.ImportResult)
    assert integrity.session_verify(session=result.session) is None


def test_the_worker_module_is_pure():
    import subprocess

    code = (
        "import sys; import sessions_app.store.importing.worker; "
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], check=True)


def test_the_fast_message_check_knows_every_message_rule():
    from sessions_app.core import piformat
    from sessions_app.store.importing import worker

    assert set(worker._CONTENT_TYPES) == set(piformat.MESSAGE_FIELDS)


def _plain_in_place(line: bytes, max_depth: int, max_line: int) -> Any:
    """import_worker._plain_message on a line in the middle of a file, as the worker reads it."""
    from sessions_app.store.importing import worker

    data = b'{"before":[[1]]}\n' + line + b'\n{"after":[{}]}'
    start = data.index(line)
    return worker._plain_message(data, memoryview(data), start, start + len(line), max_depth, max_line)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("parentId"),
        lambda e: e.update(id=""),
        lambda e: e.update(id=7),
        lambda e: e.update(id="x" * 201),
        lambda e: e.update(parentId=3),
        lambda e: e.update(timestamp="yesterday"),
        lambda e: e.update(timestamp="2026-01-01T00:00:00"),  # no offset
        lambda e: e.update(timestamp="2026-01-01T00:00:00.000Z" + " " * 60),
        lambda e: e.update(message=[]),
        lambda e: e["message"].update(role=None),
        lambda e: e["message"].update(role="r" * 65),
        lambda e: e["message"].pop("content"),
        lambda e: e["message"].update(content={"type": "text"}),
        lambda e: e["message"].update(timestamp=True),
        lambda e: e["message"].update(timestamp="1"),
        lambda e: e["message"].update(role="assistant", content="text, not blocks"),
        lambda e: e["message"].update(role="toolResult", content=None),
        lambda e: e["message"].update(role="custom", content=5),  # no rules for this role: valid
        lambda e: e.update(extra={"deep": [[[[1]]]]}),  # unknown fields: valid
    ],
)
def test_the_fast_message_check_accepts_only_what_validate_entry_accepts(mutate):
    from sessions_app.core import piformat

    entry = {
        "type": "message", "id": "a1b2c3d4", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
    }  # fmt: skip
    assert _plain_in_place(json.dumps(entry).encode(), 512, 1 << 20) is not None
    mutate(entry)
    line = json.dumps(entry).encode()
    fast = _plain_in_place(line, 512, 1 << 20)
    if fast is not None:
        assert piformat.validate_entry(json.loads(line)) is None
        assert fast[0] == json.loads(line)  # the line itself, not its neighbours
    assert _plain_in_place(line, 1, 1 << 20) is None  # deeper than the limit: the full check
    assert _plain_in_place(line, 512, 10) is None  # longer than the limit: the full check


def test_the_depth_bound_counts_the_line_only():
    """Brackets on the lines around it do not count against a line's depth limit."""
    line = json.dumps(
        {"type": "message", "id": "a1b2c3d4", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}
    ).encode()  # fmt: skip
    own = line.count(b"{") + line.count(b"[")
    assert _plain_in_place(line, own, 1 << 20) is not None
    assert _plain_in_place(line, own - 1, 1 << 20) is None
