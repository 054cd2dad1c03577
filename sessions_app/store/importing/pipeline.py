"""Importing a pi session file: the one pipeline.

1. read the header (piformat.read_header) and find the importer's stored session for its id, if
   any (identity.stored_copy: pi's id, kept as the source id when the server id differs);
2. decide what to read: the whole file, or only the lines a file grew by since its last import;
3. build the rows (worker.build: read and check each line, place each entry, make its row), in a
   forked child for a large new file (worker_client), in this process otherwise;
4. write them as they come: each row's chain hash and the session's running digest
   (rows.hash_rows), then multi-row INSERTs (rows.insert_rows), the garbage collector held off;
5. finish: a file with problems is refused whole (the transaction rolls back), unless partial;
   otherwise the session row, the extra lines, the leaf, the audit record and the events.

Where step 3 runs is the only difference between a small and a large import: both run the same
code, and a child that fails hands the file back to this process (what it wrote is rolled back).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from sessions_app import events
from sessions_app.access import audit, permissions
from sessions_app.core import jsjson, piformat
from sessions_app.core.piformat import Header, Problem
from sessions_app.errors import ImportRejected, SessionConflict, SessionForbidden
from sessions_app.models import Session
from sessions_app.store import checkpoint, rows
from sessions_app.store.importing import gcpause, identity, worker, worker_client
from sessions_app.store.services import chain_key
from sessions_app.store.stored_tree import DbTree

log = logging.getLogger(__name__)

ANALYZE_AFTER = 5000  # entries added by one import: PostgreSQL's statistics are renewed after


@dataclass(slots=True)
class ImportResult:
    session: Session
    created: bool
    added: int
    skipped: list[Problem] = field(default_factory=list)
    version: int = piformat.CURRENT_VERSION
    built_by: Literal["worker", "process"] = "process"
    worker_private_mb: float = 0.0  # the child's own memory at its end, when one built the rows


def import_limits() -> piformat.Limits:
    return piformat.Limits(
        max_line_bytes=settings.PIWEB_IMPORT_MAX_LINE_BYTES,
        max_file_bytes=settings.PIWEB_IMPORT_MAX_FILE_BYTES,
        max_depth=settings.PIWEB_IMPORT_MAX_DEPTH,
    )


Builder = Literal["auto", "worker", "process"]


def session_import(
    *,
    owner: User,
    data: bytes,
    source_path: str = "",
    partial: bool = False,
    progress: Callable[[int], None] | None = None,
    builder: Builder = "auto",
    run: Callable[..., worker_client.WorkerRun] = worker_client.WorkerRun,
) -> ImportResult:
    """Import a pi session file; importing it again adds only the lines not stored yet.

    By default any problem refuses the whole file (ImportRejected lists them all, with their line
    numbers, and nothing is stored). With partial=True the sound part is imported and the skipped
    lines are reported. builder: where rows are built ("auto": a forked child for a new file of
    at least PIWEB_IMPORT_WORKER_MIN_BYTES, where fork is available); run starts that child."""
    limits = import_limits()
    if len(data) > limits.max_file_bytes:
        _reject([Problem(0, f"file is {len(data)} bytes, over the limit of {limits.max_file_bytes}")])
    header, problem = piformat.read_header(data, limits)
    if problem is not None:
        _reject([problem])
    assert header is not None
    with checkpoint.deferred(len(data)), transaction.atomic():
        existing = identity.stored_copy(owner=owner, source_id=header.obj["id"])
        if existing is not None:
            _require_reimport(owner, existing)
            session, created = existing, False
        else:
            session, created = _new_session(owner, header), True
            if not _row_reserved(session):
                # Another import of the same file committed it first (PostgreSQL): import into it.
                return session_import(
                    owner=owner, data=data, source_path=source_path, partial=partial, progress=progress
                )
        start, grown = _where_to_read(existing, data, header)
        use_worker = builder == "worker" or (builder == "auto" and created and _worker_worthwhile(data))
        outcome = _build_and_write(
            session, data, start, owner=owner, use_worker=use_worker, run=run, all_lines=not created and not grown,
            progress=progress,
        )  # fmt: skip
        summary, digest, built_by, file_hash = outcome
        if summary.problems and not partial:
            _reject(summary.problems)
        session.last_seq += summary.placed
        session.entries_digest = digest or None
        if created or grown:
            # A changed file read whole again keeps the extra lines recorded the first time.
            session.extra_headers += [[at, raw] for at, raw in summary.extra_lines]
        if summary.placed or created:
            session.leaf_id = summary.leaf_id if summary.leaf_id is not None else session.leaf_id
        if summary.problems:
            session.import_report = session.import_report + [p.as_dict() for p in summary.problems]
        if summary.listing is not session:
            for name in ("name", "message_count", "first_message", "modified_ms"):
                setattr(session, name, getattr(summary.listing, name))
        _finish(session, owner=owner, data=data, source_path=source_path, created=created, added=summary.placed,
                sha256=file_hash)  # fmt: skip
    return ImportResult(
        session, created, summary.placed, summary.problems, header.version, built_by, summary.private_mb
    )


def _reject(problems: list[Problem]) -> None:
    raise ImportRejected(
        f"{len(problems)} problem(s) in the file; nothing was imported", errors=[p.as_dict() for p in problems]
    )


def _require_reimport(user: User, session: Session) -> None:
    """Importing a file whose session is stored already updates it: its owner may, and so may a
    member of its team who may import there (any editor keeps a mirrored session up to date)."""
    if session.deleting:
        raise SessionConflict(f"session {session.public_id} is being deleted; import it again once it is gone")
    role = permissions.session_access(user, session)
    if not permissions.can(role, "import"):
        raise SessionForbidden(
            f"session {session.public_id} is already in piweb, in a team where your role ({role}) may not import",
            need="import", role=str(role),
        )  # fmt: skip


def _new_session(owner: User, header: Header) -> Session:
    cwd = header.obj.get("cwd")
    return Session(
        public_id=identity.server_id(header.obj["id"]),
        source_id=header.obj["id"],
        owner=owner,
        header_raw=header.raw
        if header.version == piformat.CURRENT_VERSION
        else jsjson.dumps(piformat.migrated_header(header)),
        cwd=cwd if isinstance(cwd, str) else "",
        created=str(header.obj.get("timestamp", "")),
    )


def _row_reserved(session: Session) -> bool:
    """Give a new session its id. On SQLite: the id AUTOINCREMENT would give, its row written once
    its entries are (in _finish); the import's transaction is IMMEDIATE (settings), so no other
    writer can take the id meanwhile. Why: a page written at the start of a big transaction,
    pushed out to the WAL once the page cache fills and written again at its end (the session's
    row and its indexes) is overwritten in place, and at COMMIT SQLite re-reads and re-checksums
    every WAL frame after it (~100 ms of a 100k import). On PostgreSQL the row is saved now:
    False if another import of the same file committed it first."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sessions_app_session'), 0),"
                " coalesce((SELECT max(id) FROM sessions_app_session), 0)) + 1"
            )
            session.pk = int(cursor.fetchone()[0])
        return True
    try:
        with transaction.atomic():
            session.save()
    except IntegrityError:
        if not Session.objects.filter(public_id=session.public_id).exists():
            raise
        return False
    return True


def _where_to_read(existing: Session | None, data: bytes, header: Header) -> tuple[Header, bool]:
    """Where the lines to read start: after the header, or, for a v3 file that only grew since it
    was imported (its stored prefix unchanged), where it grew (its line numbers go on from there)."""
    if existing is None or not existing.source_bytes or len(data) < existing.source_bytes:
        return header, False
    if header.version != piformat.CURRENT_VERSION or header.end > existing.source_bytes:
        return header, False  # v1/v2 ids come from a migration over the whole file
    prefix = memoryview(data)[: existing.source_bytes]
    if data[existing.source_bytes - 1] != ord("\n") or hashlib.sha256(prefix).hexdigest() != existing.source_sha256:
        return header, False
    lines_before = data.count(b"\n", 0, existing.source_bytes)
    return Header(header.obj, header.raw, lines_before, existing.source_bytes, header.version), True


def _worker_worthwhile(data: bytes) -> bool:
    """Below PIWEB_IMPORT_WORKER_MIN_BYTES (negative: never) rows are built in this process: two
    processes pay off only once the rows take longer to build than a fork takes."""
    threshold = settings.PIWEB_IMPORT_WORKER_MIN_BYTES
    return worker_client.AVAILABLE and threshold >= 0 and len(data) >= threshold


Outcome = tuple[worker.Summary, str, Literal["worker", "process"], str]


def _build_and_write(
    session: Session,
    data: bytes,
    start: Header,
    *,
    owner: User,
    use_worker: bool,
    run: Callable[..., worker_client.WorkerRun],
    all_lines: bool,
    progress: Callable[[int], None] | None,
) -> Outcome:
    """Steps 3 and 4: (the summary, the session's digest after the new rows, who built them, the
    file's SHA-256)."""
    job = worker.Job(
        session_pk=session.pk, author_id=owner.pk, created_at=connection.ops.adapt_datetimefield_value(timezone.now()),
        limits=import_limits(), header=start, first_seq=session.last_seq + 1,
    )  # fmt: skip
    # The file's hash in a thread: hashlib lets go of the GIL, and it overlaps the rows' building.
    file_hash = hashlib.sha256()
    hasher = threading.Thread(target=file_hash.update, args=(data,), name="piweb-import-sha256")
    hasher.start()
    try:
        if use_worker:
            savepoint = transaction.savepoint()
            child = run(job, data)
            try:
                written = _write(session, data, child.messages(), DbTree(session), progress)
            finally:
                child.close()
            if isinstance(written, tuple):
                transaction.savepoint_commit(savepoint)
                return (*written, "worker", _hexdigest(hasher, file_hash))
            transaction.savepoint_rollback(savepoint)  # the child failed: what it built goes
            log.info("import of %s: rows built in process instead (%s)", session.public_id, written.reason)
            if progress is not None and written.reported:
                progress(-written.reported)  # the bytes are read and reported again
        tree = DbTree(session, all_lines=all_lines, all_ids=not all_lines)
        messages = worker.build(data, job, stored=tree, listing=session)
        built = _write(session, data, messages, tree, progress)
        assert isinstance(built, tuple)  # (this process's build raises rather than fail)
        return (*built, "process", _hexdigest(hasher, file_hash))
    finally:
        if hasher.is_alive():
            hasher.join()


def _hexdigest(hasher: threading.Thread, file_hash: Any) -> str:
    hasher.join()
    return str(file_hash.hexdigest())


@dataclass(frozen=True, slots=True)
class _Failed:
    reason: str
    reported: int  # progress already reported


def _write(
    session: Session,
    data: bytes,
    messages: Iterator[tuple[str, Any]],
    tree: DbTree,
    progress: Callable[[int], None] | None,
) -> tuple[worker.Summary, str] | _Failed:
    """Step 4: write the rows as they come; the summary and the digest after them."""
    key = chain_key()
    digest = session.entries_digest or ""
    lines = memoryview(data)
    reported = 0
    raw_at = rows.COLUMNS.index("raw")
    with gcpause.paused(), connection.cursor() as cursor:
        for kind, payload in messages:
            if kind == "rows":
                for row in payload:
                    raw = row[raw_at]
                    if type(raw) is tuple:
                        row[raw_at] = lines[raw[0] : raw[1]]
                digest = rows.hash_rows(key, payload, tree.chains, digest)
                rows.insert_rows(cursor, payload, vendor=connection.vendor, raw_bytes=True)
            elif kind == "progress":
                reported += payload
                if progress is not None:
                    progress(payload)
            elif kind == "done":
                return payload, digest
            else:
                return _Failed(str(payload), reported)
    return _Failed("the rows ended without a summary", reported)


def _finish(
    session: Session, *, owner: User, data: bytes, source_path: str, created: bool, added: int, sha256: str
) -> None:
    """Step 5: the source recorded, the session saved, audit and events."""
    session.source_path = source_path or session.source_path
    session.source_bytes = len(data)
    session.source_sha256 = sha256
    session.save(force_insert=session._state.adding)  # (new on SQLite: written after its entries)
    if added >= ANALYZE_AFTER and connection.vendor == "postgresql":
        # Fresh statistics, or PostgreSQL plans the path walks for an empty table.
        transaction.on_commit(_analyze_entries)
    if added and not created:
        events.publish_on_commit(session, events.changed_event(session, "import"))
    audit.audit_record(
        actor=owner, action="session.import", obj_type="session", obj_id=session.public_id,
        extra={"created": created, "bytes": len(data), "source": source_path},
    )  # fmt: skip


def _analyze_entries() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_entry")
