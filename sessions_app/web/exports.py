"""Downloads of a session: its pi JSONL file and pi's self-contained HTML export, named as pi names
them (listing.session_file_stem: "<stem>.jsonl", and "pi-session-<stem>.html" as pi's /export). The
page and the REST API both answer with these.

Both are streamed with bounded memory: the entries are read a batch at a time
(selectors.entry_batches) and each batch is sent before the next is read, so the first byte leaves
at once and the server holds one batch, whatever the session's size. Under ASGI (daphne) the pieces
come through an async iterator that reads each one in the request's thread: Django would otherwise
gather a synchronous iterator into one list before sending the first byte. An HTML export of more
than PIWEB_EXPORT_HTML_MAX_ENTRIES entries is refused (ExportTooLarge), offering the JSONL instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header

from sessions_app.access import audit
from sessions_app.core.listing import session_file_stem
from sessions_app.errors import ExportTooLarge, InvalidRequest
from sessions_app.models import Session, Team
from sessions_app.render import export
from sessions_app.store import review_export, selectors

CHUNK_BYTES = 256 * 1024  # JSONL lines are sent in pieces of about this size


def _attachment(response: StreamingHttpResponse, name: str) -> None:
    # RFC 6266 quoting: imported ids may hold non-ASCII characters.
    response["Content-Disposition"] = content_disposition_header(True, name) or "attachment"


def _stem(session: Session) -> str:
    """pi's file name for the session: by pi's id (the source id, when the server id differs)."""
    return session_file_stem(session.created, session.source_id or session.public_id)


async def _each_in_thread(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    """pieces, each one made in the request's thread (where its database connection lives)."""

    def step() -> bytes | None:
        return next(pieces, None)

    in_thread = sync_to_async(step, thread_sensitive=True)
    while (piece := await in_thread()) is not None:
        yield piece


def streamed(request: HttpRequest, pieces: Iterator[bytes], content_type: str) -> StreamingHttpResponse:
    """A response of these pieces, each made in the request's thread under ASGI (_each_in_thread)."""
    content = _each_in_thread(pieces) if isinstance(request, ASGIRequest) else pieces
    return StreamingHttpResponse(content, content_type=content_type)


def _jsonl_pieces(session: Session, mirror: bool, with_labels: bool) -> Iterator[bytes]:
    """The JSONL lines in pieces of about CHUNK_BYTES; the header at once, before any entry is read."""
    lines = selectors.export_lines(
        session=session, upto=session.last_seq, mirror=mirror, with_labels=with_labels
    )  # (upto: as the request found it)
    yield next(lines).encode()
    buffer: list[str] = []
    size = 0
    for line in lines:
        buffer.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(buffer).encode()
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode()


def jsonl_response(
    request: HttpRequest, session: Session, *, mirror: bool = False, with_labels: bool = False
) -> StreamingHttpResponse:
    """The session as pi JSONL, streamed (audited as an export). mirror: a mirror's file as its
    pusher has it (selectors.export_lines), with_labels: and piweb's labels on it at the end."""
    extra = {"format": "jsonl"} | ({"mirror": True, "labels": with_labels} if mirror else {})
    audit.audit_record(action="session.export", obj_type="session", obj_id=session.public_id, extra=extra)
    response = streamed(request, _jsonl_pieces(session, mirror, with_labels), "application/x-ndjson")
    _attachment(response, f"{_stem(session)}.jsonl")
    return response


TEAM_REVIEW_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def team_reviews_response(request: HttpRequest, team: Team, fmt: str) -> StreamingHttpResponse:
    """A team's reviews (store/review_export.py) as CSV or JSON, streamed (audited as an export);
    the caller has checked that the user is a member of the team."""
    if fmt not in TEAM_REVIEW_TYPES:
        raise InvalidRequest("format must be csv or json", field="format")
    audit.audit_record(action="team.reviews_export", obj_type="team", obj_id=str(team.public_id), extra={"format": fmt})
    pieces = review_export.team_reviews_csv(team=team) if fmt == "csv" else review_export.team_reviews_json(team=team)
    response = streamed(request, pieces, TEAM_REVIEW_TYPES[fmt])
    _attachment(response, f"piweb-reviews-{team.public_id}.{fmt}")
    return response


def html_export_check(session: Session) -> None:
    """ExportTooLarge if the session has more entries than an HTML export may hold."""
    limit = settings.PIWEB_EXPORT_HTML_MAX_ENTRIES
    if session.last_seq > limit:
        raise ExportTooLarge(
            f"This session has {session.last_seq:,} entries, more than an HTML export may hold ({limit:,}). "
            "Download it as JSONL instead: pi and piweb both open that.",
            entries=session.last_seq,
            limit=limit,
            jsonl=reverse("sessions:export_jsonl", args=[session.public_id]),
        )


def html_response(request: HttpRequest, session: Session, *, with_reviews: bool = False) -> StreamingHttpResponse:
    """pi's self-contained HTML export of the session, streamed (audited as an export); with_reviews:
    with its review comments and verdicts (whoever may read the session reads those)."""
    html_export_check(session)
    extra = {"format": "html"} | ({"reviews": True} if with_reviews else {})
    audit.audit_record(action="session.export", obj_type="session", obj_id=session.public_id, extra=extra)
    pieces = export.export_chunks(session, with_reviews=with_reviews)
    response = streamed(request, pieces, "text/html; charset=utf-8")
    # The file's own policy (its meta element says the same): only its script and style run.
    response["Content-Security-Policy"] = export.export_policy()
    _attachment(response, f"pi-session-{_stem(session)}.html")
    return response
