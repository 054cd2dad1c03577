"""Importing a pi session file: the one pipeline.

1. read the header (piformat.read_header) and find the importer's stored session for its id, if
   any (identity.stored_copy: pi's id, kept as the source id when the server id differs);
2. open a stage (one short transaction): a new session is created as a staging session
   (Session.staging), which no reader or other writer sees (models.VISIBLE); a session already
   stored gets a staging sibling for its new rows, made when the first batch is written;
3. decide what to read: the whole file, or only the lines a file grew by since its last import;
4. build the rows (worker.build: read and check each line, place each entry, make its row), in
   a forked child for a large new file (worker_client), in this process otherwise;
5. write them as they come, a batch at a time (writing.write): each row's chain hash and the
   session's running digest, then multi-row INSERTs into the staging session; a transaction
   stays open across batches, and commits at once when another writer waits;
6. publish (one short transaction), or discard: a file with problems is refused whole, unless
   partial; the staging session is then deleted whole (services.staging_discard, the one delete
   path; never its rows one by one). Otherwise a new session's row gets its fields and stops being
   staging; a stored session gets the staged rows copied in (one INSERT ... SELECT) and its
   fields, and the sibling is deleted whole. Then the audit record and the events.

Other writers never wait behind an import: it holds the database's write lock (SQLite) or the
session's row lock (PostgreSQL) one transaction at a time, never for the whole file. Readers see an
import all or nothing: a new session appears when it is published; a re-import's rows are not
the stored session's until the copy commits. (Not a watermark on the stored session, with rows
above it hidden: a failed import would leave those rows in a session that lives on, where they
could go only one by one, which the append-only guard forbids.) If the stored session changed
while the file was imported (an append), the import starts again, once. An import that stopped
(a crash, a kill) leaves only a staging session, which the janitor deletes whole once it has been
untouched for PIWEB_IMPORT_STALE_SECONDS (services.staging_discard_stale); so does the next import
of the same file.

Memory is bounded: the file is read a block at a time (core/filesource.py: a mapping of the
uploaded or named file, its pages let go of as the import moves on), rows travel in batches, and
what is kept per entry is its id, place and chain hash. Problems are capped (intake.MAX_PROBLEMS:
"and N more"), and so is what a file stores outside its entries (PIWEB_IMPORT_MAX_EXTRA_BYTES).

Where step 4 runs is the only difference between a small and a large import: both run the same
code, and a child that fails hands the file back to this process (its stage is discarded first).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from sessions_app import events
from sessions_app.access import audit, permissions
from sessions_app.core import jsjson, piformat
from sessions_app.core.filesource import Source, as_source
from sessions_app.core.piformat import Header, Problem
from sessions_app.errors import (
    ImportRejected,
    ImportTooLarge,
    SessionConflict,
    SessionForbidden,
    SessionNotFound,
    SyncConflict,
)
from sessions_app.models import VISIBLE, Session
from sessions_app.store import checkpoint, rows, search_index, services
from sessions_app.store.importing import identity, worker, worker_client, writing
from sessions_app.store.importing.writing import WorkerFailed
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


@dataclass(frozen=True, slots=True)
class Increment:
    """Lines a synced file grew by (`piweb sync`): the precondition is the stored prefix (its bytes
    and SHA-256); the client, which holds the whole file, says the SHA-256 once they are added."""

    offset: int
    sha256_before: str
    sha256_after: str


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a mirrored session's file lives: the pushing machine and the file's path there."""

    host: str
    path: str


def import_limits() -> piformat.Limits:
    return piformat.Limits(
        max_line_bytes=settings.PIWEB_IMPORT_MAX_LINE_BYTES,
        max_file_bytes=settings.PIWEB_IMPORT_MAX_FILE_BYTES,
        max_depth=settings.PIWEB_IMPORT_MAX_DEPTH,
        max_extra_bytes=settings.PIWEB_IMPORT_MAX_EXTRA_BYTES,
        max_legacy_bytes=settings.PIWEB_IMPORT_MAX_LEGACY_BYTES,
        max_entries=settings.PIWEB_IMPORT_MAX_ENTRIES,
    )


Builder = Literal["auto", "worker", "process"]


def session_import(
    *,
    owner: User,
    data: bytes | Source,
    source_path: str = "",
    partial: bool = False,
    progress: Callable[[int], None] | None = None,
    builder: Builder = "auto",
    run: Callable[..., worker_client.WorkerRun] = worker_client.WorkerRun,
    in_place: bool = False,
    increment: Increment | None = None,
    origin: Origin | None = None,
    expect_pk: int | None = None,
) -> ImportResult:
    """Import a pi session file (its bytes, or a filesource.Source of the file); importing it
    again adds only the lines not stored yet.

    By default any problem refuses the whole file (ImportRejected lists them all, with their line
    numbers, and nothing is stored). With partial=True the sound part is imported and the skipped
    lines are reported. builder: where rows are built ("auto": a forked child for a new file of
    at least PIWEB_IMPORT_WORKER_MIN_BYTES, where fork is available); run starts that child.
    in_place: one transaction, the stored session locked throughout (what a re-import falls back
    to when the session changed while it was staged: writers of that session then wait for it)."""
    source = as_source(data)
    limits = import_limits()
    if source.size > limits.max_file_bytes:
        _reject([Problem(0, f"file is {source.size} bytes, over the limit of {limits.max_file_bytes}", True)])
    header, problem = piformat.read_header(source, limits)
    if problem is not None:
        _reject([problem])
    assert header is not None
    again: dict[str, Any] = {
        "owner": owner, "data": source, "source_path": source_path, "partial": partial, "progress": progress,
        "run": run, "increment": increment, "origin": origin,
        "expect_pk": expect_pk,
    }  # fmt: skip
    if in_place:
        try:
            with transaction.atomic():
                stage = _open_stage(owner, header, in_place=True, stale_s=_stale_s(origin))
                return _import(stage, source, header, owner=owner, source_path=source_path, partial=partial,
                               progress=progress, builder=builder, run=run, increment=increment,
                               origin=origin, expect_pk=expect_pk)  # fmt: skip
        except _Raced:
            return session_import(**again, builder=builder)
        except WorkerFailed:
            return session_import(**again, builder="process", in_place=True)
    try:
        stage = _open_stage(owner, header, stale_s=_stale_s(origin))
    except _Raced:
        return session_import(**again, builder=builder)
    try:
        return _import(stage, source, header, owner=owner, source_path=source_path, partial=partial,
                       progress=progress, builder=builder, run=run, increment=increment, origin=origin,
                       expect_pk=expect_pk)  # fmt: skip
    except WorkerFailed as failed:
        _discard(stage)
        log.info("import of %s: rows built in process instead (%s)", header.obj["id"], failed.reason)
        if progress is not None and failed.reported:
            progress(-failed.reported)  # the bytes are read and reported again
        return session_import(**again, builder="process")
    except _Changed:
        _discard(stage)
        return session_import(**again, builder=builder, in_place=True)
    except BaseException:
        _discard(stage)
        raise


def _import(
    stage: _Stage,
    source: Source,
    header: Header,
    *,
    owner: User,
    source_path: str,
    partial: bool,
    progress: Callable[[int], None] | None,
    builder: Builder,
    run: Callable[..., worker_client.WorkerRun],
    increment: Increment | None = None,
    origin: Origin | None = None,
    expect_pk: int | None = None,
) -> ImportResult:
    """Steps 3-6 for an open stage."""
    if expect_pk is not None and stage.session.pk != expect_pk:
        raise SyncConflict("another of your sessions holds this file's pi id", code="other_session")
    if increment is not None:
        start, grown = _increment_start(stage, header, increment), True
    else:
        start, grown = _where_to_read(None if stage.created else stage.session, source, header)
        if origin is not None and not stage.created and not grown:
            raise SyncConflict(
                "the stored prefix of this file differs from the pushed file: it was rewritten or changed",
                code="prefix_changed", bytes=stage.session.source_bytes, sha256=stage.session.source_sha256,
                lines=stage.session.source_lines,
            )  # fmt: skip
    use_worker = builder == "worker" or (builder == "auto" and stage.created and _worker_worthwhile(source))
    with checkpoint.deferred(source.size):
        summary, digest, built_by, file_hash = _build_and_write(
            stage, source, start, owner=owner, use_worker=use_worker, run=run,
            all_lines=not stage.created and not grown, progress=progress,
        )  # fmt: skip
        if summary.refused or (summary.problems and not partial):
            _reject(summary.problems, summary.more_problems)
        session = stage.session
        session.last_seq += summary.placed
        session.entries_digest = digest or None
        if stage.created or grown:
            # A changed file read whole again keeps the extra lines recorded the first time.
            session.extra_headers = session.extra_headers + [[at, raw] for at, raw in summary.extra_lines]
            _require_extra_bytes(session.extra_headers)
        if summary.placed or stage.created:
            session.leaf_id = summary.leaf_id if summary.leaf_id is not None else session.leaf_id
        if summary.problems:
            report = [p.as_dict() for p in summary.problems] + _more(summary.more_problems)
            session.import_report = session.import_report + report
        if summary.listing is not session:
            for name in ("name", "message_count", "first_message", "modified_ms", "cost", "total_tokens"):
                setattr(session, name, getattr(summary.listing, name))
        # (An increment's lines are numbered on from the stored ones: newlines is the file's count.)
        if increment is None:
            stored = _Stored(source.size, file_hash, summary.newlines)
        else:
            stored = _Stored(increment.offset + source.size - start.end, increment.sha256_after, summary.newlines)
        _publish(stage, owner=owner, stored=stored, source_path=source_path, added=summary.placed, origin=origin)
    _discard(stage, published=True)
    search_index.catch_up_soon(stage.session.pk)
    return ImportResult(
        stage.session, stage.created, summary.placed, summary.problems, header.version, built_by, summary.private_mb
    )


def _require_extra_bytes(extra: list[list[Any]]) -> None:
    """The bound on lines kept outside entries holds for the session's, whatever the imports."""
    limit = settings.PIWEB_IMPORT_MAX_EXTRA_BYTES
    if sum(len(raw.encode()) + 1 for _, raw in extra) > limit:
        message = f"the lines stored outside entries (repeated header or entry lines) take more than {limit} bytes"
        _reject([Problem(0, message + ", the limit, with those of the file's earlier imports", True)])


def _increment_start(stage: _Stage, header: Header, increment: Increment) -> Header:
    """Where an increment's lines start (the source is the stored header line, then the lines),
    once the stored prefix is the one the client expects: 409 otherwise, with the server's."""
    session = stage.session
    if stage.created:
        raise SessionNotFound()  # (the caller found it: it went meanwhile)
    state = {"bytes": session.source_bytes, "sha256": session.source_sha256, "lines": session.source_lines}
    if increment.sha256_before != session.source_sha256 and increment.offset == session.source_bytes:
        raise SyncConflict(
            "the stored prefix of this file differs from the client's: the file was rewritten or changed",
            code="prefix_changed", **state,
        )  # fmt: skip
    if increment.offset != session.source_bytes:
        raise SyncConflict(
            f"the server holds {session.source_bytes} bytes of this file, not {increment.offset}",
            code="offset_mismatch", **state,
        )  # fmt: skip
    return Header(header.obj, header.raw, session.source_lines or 0, header.end, header.version)


def _more(count: int) -> list[dict[str, Any]]:
    return [{"line": 0, "message": f"and {count} more problem(s), not listed"}] if count else []


def _reject(problems: list[Problem], more: int = 0) -> None:
    error = ImportTooLarge if any(p.too_large for p in problems) else ImportRejected
    raise error(
        f"{len(problems) + more} problem(s) in the file; nothing was imported",
        errors=[p.as_dict() for p in problems] + _more(more),
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
    public_id = identity.server_id(owner=owner, source_id=header.obj["id"])
    if public_id is None:
        raise _Raced()  # another import of the file, by this importer, stored its session meanwhile
    cwd = header.obj.get("cwd")
    return Session(
        public_id=public_id,
        source_id=header.obj["id"],
        owner=owner,
        header_raw=header.raw
        if header.version == piformat.CURRENT_VERSION
        else jsjson.dumps(piformat.migrated_header(header)),
        cwd=cwd if isinstance(cwd, str) else "",
        created=str(header.obj.get("timestamp", "")),
        staging=True,
    )


# --- the stage: where the rows go until they are published -----------------------------------


@dataclass(slots=True)
class _Stage:
    session: Session  # what readers will see: the new session (staging until published), or the stored one
    created: bool
    rows_pk: int | None  # the staging session the rows are written to (a re-import's: made at its first batch)
    expected: tuple[int, str | None, int]  # the stored session's (last_seq, entries_digest, source_bytes) then
    in_place: bool = False  # rows go straight into the stored session, locked, in one transaction


class _Changed(Exception):
    """The stored session changed while its file was imported."""


class _Raced(Exception):
    """Another import of the same new file began at the same moment (or, in place, is staging)."""


def _being_imported(public_id: str) -> SessionConflict:
    return SessionConflict(f"session {public_id} is being imported; import it again once that import is done")


def _stale_s(origin: Origin | None) -> int:
    """How long another import's untouched staging session of the same file is waited for. A
    push (origin) waits less: its client retries it after a server restart, and waiting the
    janitor's PIWEB_IMPORT_STALE_SECONDS for the import the restart stopped would stall it."""
    return settings.PIWEB_SYNC_STALE_SECONDS if origin is not None else settings.PIWEB_IMPORT_STALE_SECONDS


def _open_stage(owner: User, header: Header, *, in_place: bool = False, stale_s: int) -> _Stage:
    """Step 2, in one short transaction (in_place: in the caller's). Another import of the same
    file staging it meanwhile is waited for, then imported into; one that stopped is discarded."""
    public_id = header.obj["id"]
    while True:
        with transaction.atomic():
            existing = identity.stored_copy(owner=owner, source_id=public_id)
            if existing is not None and existing.staging:
                stale = timezone.now() - timedelta(seconds=stale_s)
                if existing.updated_at < stale:
                    services.staging_discard(session_pk=existing.pk)  # an import that stopped
                    existing = None
            if existing is None or not existing.staging:
                return _stage_in(owner, header, existing, in_place=in_place)
            if in_place:
                raise _Raced()  # waited for outside the caller's transaction
        time.sleep(WAIT_S)  # (outside the transaction: the other import writes meanwhile)


WAIT_S = 0.05  # between two looks at another import of the same file


def _stage_in(owner: User, header: Header, existing: Session | None, *, in_place: bool) -> _Stage:
    if existing is not None:
        _require_reimport(owner, existing)
        expected = (existing.last_seq, existing.entries_digest, existing.source_bytes)
        return _Stage(existing, False, existing.pk if in_place else None, expected, in_place)
    session = _new_session(owner, header)
    try:
        with transaction.atomic():
            session.save(force_insert=True)
    except IntegrityError:
        if not Session.objects.filter(public_id=session.public_id).exists():
            raise
        raise _Raced() from None  # another import of the file began meanwhile: wait for it
    return _Stage(session, True, session.pk, (0, None, 0), in_place)


def _sibling(stage: _Stage) -> int:
    """The staging session a re-import's rows go to, made on its first batch."""
    if stage.rows_pk is None:
        target = stage.session
        sibling = Session.objects.create(
            public_id=f"staging:{target.pk}:{uuid.uuid4()}",
            owner_id=target.owner_id, header_raw="", created="", staging=True,
        )  # fmt: skip
        stage.rows_pk = sibling.pk
    return stage.rows_pk


def _discard(stage: _Stage, *, published: bool = False) -> None:
    """The staging session goes, whole: after a failure, or a re-import's sibling once its rows
    are copied. (A new session's, once published, is the session itself.)"""
    if stage.rows_pk is None or stage.in_place or (published and stage.created):
        return
    try:
        services.staging_discard(session_pk=stage.rows_pk)
    except Exception:  # the janitor deletes it later (staging_discard_stale)
        log.exception("could not delete the staging session %s now", stage.rows_pk)
    stage.rows_pk = None


_IMPORT_FIELDS = [
    "last_seq", "entries_digest", "extra_headers", "leaf_id", "import_report", "name", "message_count",
    "first_message", "modified_ms", "source_path", "source_bytes", "source_sha256", "updated_at", "source_lines",
    "origin_host", "origin_path", "pushed_at", "mirror_seqs", "cost", "total_tokens",
]  # fmt: skip
_COPY = (
    "INSERT INTO sessions_app_entry (session_id, {columns}) SELECT %s, {columns} FROM sessions_app_entry"
    " WHERE session_id = %s ORDER BY seq"
).format(columns=", ".join(rows.COLUMNS[1:]))


@dataclass(frozen=True, slots=True)
class _Stored:
    """How much of the source file the session holds once published."""

    size: int
    sha256: str
    lines: int


def _publish(
    stage: _Stage, *, owner: User, stored: _Stored, source_path: str, added: int, origin: Origin | None
) -> None:
    """Step 6, in one short transaction: the session as readers will see it."""
    session = stage.session
    session.source_path = source_path or session.source_path
    session.source_bytes = stored.size
    session.source_sha256 = stored.sha256
    session.source_lines = stored.lines
    session.mirror_seqs = _mirror_seqs(session, added)
    if origin is not None:
        session.origin_host, session.origin_path, session.pushed_at = origin.host, origin.path, timezone.now()
    with transaction.atomic():
        if stage.created:
            if not Session.objects.select_for_update().filter(pk=session.pk, staging=True).exists():
                raise _being_imported(session.public_id)  # discarded as stale meanwhile
            session.staging = None
            session.save()
        else:
            found = (
                Session.objects.select_for_update(no_key=True)
                .filter(VISIBLE, pk=session.pk)
                .values_list("last_seq", "entries_digest", "source_bytes")
                .first()
            )
            if found is None:
                raise SessionConflict(f"session {session.public_id} was deleted while the file was imported")
            if tuple(found) != stage.expected:
                raise _Changed()
            if stage.rows_pk is not None and not stage.in_place:
                with connection.cursor() as cursor:
                    cursor.execute(_COPY, [session.pk, stage.rows_pk])
            session.save(update_fields=_IMPORT_FIELDS)
        if added:
            session.indexed_seq = search_index.index_published(session, upto=session.last_seq - added)
        _finish(session, owner=owner, size=stored.size, source_path=source_path, created=stage.created, added=added,
                via="sync" if origin is not None else "import")  # fmt: skip


def _mirror_seqs(session: Session, added: int) -> list[list[int]]:
    """The session's mirrored seqs with the `added` entries just placed (the last ones)."""
    ranges = [
        list(r) for r in session.mirror_seqs or ([[1, session.last_seq - added]] if session.last_seq > added else [])
    ]
    if added:
        first = session.last_seq - added + 1
        if ranges and ranges[-1][1] == first - 1:
            ranges[-1][1] = session.last_seq
        else:
            ranges.append([first, session.last_seq])
    return ranges


def _where_to_read(existing: Session | None, source: Source, header: Header) -> tuple[Header, bool]:
    """Where the lines to read start: after the header, or, for a v3 file that only grew since it
    was imported (its stored prefix unchanged), where it grew (its line numbers go on from there)."""
    if existing is None or not existing.source_bytes or source.size < existing.source_bytes:
        return header, False
    if header.version != piformat.CURRENT_VERSION or header.end > existing.source_bytes:
        return header, False  # v1/v2 ids come from a migration over the whole file
    if source.buffer[existing.source_bytes - 1] != ord("\n"):
        return header, False
    if source.sha256(0, existing.source_bytes).hexdigest() != existing.source_sha256:
        return header, False
    lines_before = source.count(b"\n", 0, existing.source_bytes)
    return Header(header.obj, header.raw, lines_before, existing.source_bytes, header.version), True


def _worker_worthwhile(source: Source) -> bool:
    """Below PIWEB_IMPORT_WORKER_MIN_BYTES (negative: never) rows are built in this process: two
    processes pay off only once the rows take longer to build than a fork takes."""
    threshold = settings.PIWEB_IMPORT_WORKER_MIN_BYTES
    return worker_client.AVAILABLE and threshold >= 0 and source.size >= threshold


Outcome = tuple[worker.Summary, str, Literal["worker", "process"], str]


def _build_and_write(
    stage: _Stage,
    source: Source,
    start: Header,
    *,
    owner: User,
    use_worker: bool,
    run: Callable[..., worker_client.WorkerRun],
    all_lines: bool,
    progress: Callable[[int], None] | None,
) -> Outcome:
    """Steps 4 and 5: (the summary, the session's digest after the new rows, who built them, the
    file's SHA-256; the summary holds its line count)."""
    session = stage.session
    job = worker.Job(
        session_pk=stage.rows_pk or 0, author_id=owner.pk,
        created_at=connection.ops.adapt_datetimefield_value(timezone.now()), limits=import_limits(), header=start,
        first_seq=session.last_seq + 1,
    )  # fmt: skip
    # The file's hash in a thread: hashlib lets go of the GIL, so it overlaps the rows' building
    # (not after them, on the import's critical path). Its line count comes from the reader.
    hashed: list[str] = []

    def whole_file() -> None:
        hashed.append(source.sha256().hexdigest())

    hasher = threading.Thread(target=whole_file, name="piweb-import-sha256")
    hasher.start()
    rows_pk, digest = functools.partial(_sibling, stage), session.entries_digest or ""
    try:
        if use_worker:
            child = run(job, source)
            try:
                empty = DbTree(session, empty=True)
                written = writing.write(rows_pk, digest, source, child.messages(), empty, progress)
            finally:
                child.close()
            if isinstance(written, WorkerFailed):
                raise written
            return (*written, "worker", _whole_file(hasher, hashed))
        tree = DbTree(session, all_lines=all_lines, all_ids=not all_lines, empty=stage.created)
        messages = worker.build(source, job, stored=tree, listing=session)
        built = writing.write(rows_pk, digest, source, messages, tree, progress)
        assert isinstance(built, tuple)  # (this process's build raises rather than fail)
        return (*built, "process", _whole_file(hasher, hashed))
    finally:
        if hasher.is_alive():
            hasher.join()


def _whole_file(hasher: threading.Thread, hashed: list[str]) -> str:
    """The file's SHA-256 (hex)."""
    hasher.join()
    return hashed[0]


def _finish(session: Session, *, owner: User, size: int, source_path: str, created: bool, added: int, via: str) -> None:
    """Audit and events, in the publishing transaction."""
    if added >= ANALYZE_AFTER and connection.vendor == "postgresql":
        # Fresh statistics, or PostgreSQL plans the path walks for an empty table, and a common
        # word's search by a bitmap of all its matches (1.4 s on 1M entries, not 5 ms).
        transaction.on_commit(_analyze)
    if added and not created:
        events.publish_on_commit(session, events.changed_event(session, "import"))
    audit.audit_record(
        actor=owner, action="session.import", obj_type="session", obj_id=session.public_id,
        after={"owner": owner.pk} if created else None,  # the evidence of ownership (store/accounting.py)
        extra={"created": created, "bytes": size, "source": source_path, "via": via, "added": added},
    )  # fmt: skip


def _analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_entry")
