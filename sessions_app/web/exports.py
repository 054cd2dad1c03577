"""Downloads of a session: its pi JSONL file and pi's self-contained HTML export, named as pi names
them (listing.session_file_stem: "<stem>.jsonl", and "pi-session-<stem>.html" as pi's /export). The
page and the REST API both answer with these."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from sessions_app.access import audit
from sessions_app.core.listing import session_file_stem
from sessions_app.models import Session
from sessions_app.render import markup
from sessions_app.store import selectors


def _attachment(response: HttpResponse | StreamingHttpResponse, name: str) -> None:
    # RFC 6266 quoting: imported ids may hold non-ASCII characters.
    response["Content-Disposition"] = content_disposition_header(True, name) or "attachment"


def _stem(session: Session) -> str:
    """pi's file name for the session: by pi's id (the source id, when the server id differs)."""
    return session_file_stem(session.created, session.source_id or session.public_id)


def jsonl_response(session: Session) -> StreamingHttpResponse:
    """The session as pi JSONL, streamed (audited as an export)."""
    audit.audit_record(action="session.export", obj_type="session", obj_id=session.public_id, extra={"format": "jsonl"})
    response = StreamingHttpResponse(selectors.export_lines(session=session), content_type="application/x-ndjson")
    _attachment(response, f"{_stem(session)}.jsonl")
    return response


def html_response(session: Session) -> HttpResponse:
    """pi's self-contained HTML export of the session (audited as an export)."""
    audit.audit_record(action="session.export", obj_type="session", obj_id=session.public_id, extra={"format": "html"})
    response = HttpResponse(markup.export_html(session), content_type="text/html; charset=utf-8")
    _attachment(response, f"pi-session-{_stem(session)}.html")
    return response
