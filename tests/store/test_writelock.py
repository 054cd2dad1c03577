"""store/writelock.py: a writer in a BEGIN, in this process or another, is seen by the import."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sessions_app.store import writelock


class Connection(SimpleNamespace):  # (a Django connection can be weakly referenced; SimpleNamespace cannot)
    __slots__ = ("__weakref__",)


def sqlite_connection(path: Path, *, in_atomic_block: bool = False) -> Any:
    return Connection(
        vendor="sqlite",
        settings_dict={"NAME": str(path)},
        is_in_memory_db=lambda: False,
        in_atomic_block=in_atomic_block,
    )


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(30)
"""


def test_a_writer_in_a_begin_of_another_process_is_seen(tmp_path: Path) -> None:
    importer = sqlite_connection(tmp_path / "db.sqlite3")
    assert not writelock.waiting(importer)
    other = subprocess.Popen([sys.executable, "-c", HOLD, f"{tmp_path / 'db.sqlite3'}.writers"], stdout=subprocess.PIPE)
    try:
        assert other.stdout is not None and other.stdout.readline() == b"held\n"
        assert writelock.waiting(importer)
    finally:
        other.kill()
        other.wait()
    deadline = time.monotonic() + 5
    while writelock.waiting(importer) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not writelock.waiting(importer)  # its lock went with it


def test_a_begin_is_announced_while_it_runs_and_only_then(tmp_path: Path) -> None:
    importer = sqlite_connection(tmp_path / "db.sqlite3")
    writer = sqlite_connection(tmp_path / "db.sqlite3", in_atomic_block=True)
    seen: list[bool] = []

    def execute(sql: str, params: Any, many: bool, context: Any) -> None:
        seen.append(writelock.waiting(importer))

    writelock._announced(execute, "BEGIN IMMEDIATE", None, False, {"connection": writer})
    writelock._announced(execute, "INSERT INTO t VALUES (1)", None, False, {"connection": writer})
    assert seen == [True, False]  # the BEGIN (waiting for the lock) is seen, its transaction's writes not
    assert not writelock.waiting(importer)


def test_a_write_outside_a_transaction_is_announced_reads_are_not(tmp_path: Path) -> None:
    """Django's autocommit: a save() or update() outside atomic() takes the write lock with no BEGIN."""
    importer, writer = sqlite_connection(tmp_path / "db.sqlite3"), sqlite_connection(tmp_path / "db.sqlite3")
    seen: list[tuple[str, bool]] = []

    def execute(sql: str, params: Any, many: bool, context: Any) -> None:
        seen.append((sql.split()[0], writelock.waiting(importer)))

    for sql in ('UPDATE "auth_user" SET x = 1', " insert into t values (1)", "DELETE FROM t", "SELECT 1"):
        writelock._announced(execute, sql, None, False, {"connection": writer})
    assert seen == [("UPDATE", True), ("insert", True), ("DELETE", True), ("SELECT", False)]
    assert not writelock.waiting(importer)


def test_in_memory_and_other_databases_have_no_writers_file(tmp_path: Path) -> None:
    memory = Connection(vendor="sqlite", settings_dict={"NAME": ":memory:"}, is_in_memory_db=lambda: True)
    postgres = Connection(vendor="postgresql", settings_dict={"NAME": "x"}, is_in_memory_db=lambda: False)
    assert not writelock.waiting(memory) and not writelock.waiting(postgres)
