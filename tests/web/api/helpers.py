"""URLs and reads for the API tests."""

from __future__ import annotations

from sessions_app.models import Session


def url(session_id: str | None = None, suffix: str = "") -> str:
    return "/api/sessions" + (f"/{session_id}" if session_id else "") + suffix


def entry_ids(session: Session) -> list[str]:
    """The session's entry ids in file order."""
    return list(session.entries.order_by("seq").values_list("entry_id", flat=True))
