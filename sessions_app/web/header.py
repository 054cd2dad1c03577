"""The session page's header (partial session-title in session_detail.html): its title, rename form,
where a fork came from, and the dates the list and the header show."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from django.http import HttpRequest

from sessions_app.errors import SessionNotFound
from sessions_app.models import Session, ShareLink
from sessions_app.store import selectors


class Reader(Protocol):
    """What the header reads of views.Reader (whom the page is drawn for)."""

    @property
    def session(self) -> Session: ...
    @property
    def can(self) -> dict[str, bool]: ...
    @property
    def share(self) -> ShareLink | None: ...


def when_shown(session: Session) -> dict[str, str]:
    """Created and modified, as the list and the header show them (UTC, to the minute)."""
    modified = ""
    if session.modified_ms:
        modified = datetime.fromtimestamp(session.modified_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return {"created": session.created[:16].replace("T", " "), "modified": modified}


def forked_from(request: HttpRequest, reader: Reader) -> Session | None:
    """The session this one was forked from, if the reader may open it: never for a share link's
    visitor, and nothing at all (not even that there is one) for a user who may not see it."""
    source_id = reader.session.parent_session_id
    if source_id is None or reader.share is not None:
        return None
    source = Session.objects.filter(pk=source_id).only("public_id").first()
    if source is None:
        return None
    try:
        return selectors.session_get_for_user(user=request.user, public_id=source.public_id)
    except SessionNotFound:
        return None


def title_context(request: HttpRequest, reader: Reader) -> dict[str, Any]:
    """What the header draws."""
    return {
        "session": reader.session,
        "can": reader.can,
        "when": when_shown(reader.session),
        "forked_from": forked_from(request, reader),
    }
