"""Pushing the lines a synced pi file grew by (`piweb sync`), through the import's one pipeline.

The client holds the file; the server holds a prefix of it (Session.source_bytes, .source_sha256,
.source_lines). A push names the prefix it extends (bytes and SHA-256, the precondition) and
sends only complete lines. They are parsed as the import parses a grown file: the source handed
to the pipeline is the stored header line followed by the new lines, read from just past the
header, so the same parser, limits, validation and all-or-nothing rule hold for the batch.

The server never has the file's earlier bytes, so the SHA-256 of the longer prefix is the one the
client states (Increment.sha256_after); a client that states a wrong one only makes its own next
push look like a changed file (409 prefix_changed), never stores a line twice or loses one.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User

from sessions_app.core import piformat
from sessions_app.core.filesource import Source
from sessions_app.core.piformat import Problem
from sessions_app.errors import ImportRejected, ImportTooLarge, SyncConflict
from sessions_app.models import Session
from sessions_app.store.importing import pipeline


def session_lines_append(
    *, owner: User, session: Session, data: bytes, increment: pipeline.Increment, origin: pipeline.Origin
) -> pipeline.ImportResult:
    """Add the complete lines `data` to the mirror `session` if it holds exactly the prefix the
    increment names (SyncConflict, 409, otherwise, with the server's state)."""
    if session.source_id is None and not session.source_bytes:
        raise SyncConflict("this session was made in piweb, not pushed from a file", code="not_a_mirror")
    if data and not data.endswith(b"\n"):
        line = (session.source_lines or 0) + data.count(b"\n") + 1
        message = "the last line is not complete (no newline at its end); push only whole lines"
        raise ImportRejected(message, errors=[Problem(line, message).as_dict()])
    limit = settings.PIWEB_IMPORT_MAX_FILE_BYTES
    if increment.offset + len(data) > limit:
        message = f"the file would be {increment.offset + len(data)} bytes, over the limit of {limit}"
        raise ImportTooLarge(message, errors=[Problem(0, message, True).as_dict()])
    header = session.header_raw.encode()
    source = Source(header + b"\n" + data)
    found, problem = piformat.read_header(source, pipeline.import_limits())
    if problem is not None or found is None or found.obj.get("id") != (session.source_id or session.public_id):
        raise SyncConflict("this session's stored header is not one a push can extend", code="not_a_mirror")
    return pipeline.session_import(
        owner=owner, data=source, source_path=session.source_path, increment=increment, origin=origin,
        expect_pk=session.pk,
    )  # fmt: skip
