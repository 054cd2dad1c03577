"""Every domain error the app raises, with its HTTP status.

Services and selectors raise these; each surface maps them once: web/errors.py for pages, htmx and
chat commands, piweb/api.py for the REST API. Anything a user may not see is a NotFound (404), so an
outsider cannot tell a missing object from someone else's.
"""

from __future__ import annotations

from typing import Any


class SessionsError(Exception):
    status = 400
    default_message = "The request could not be done"

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "extra": self.extra}


# --- 404: missing, or not the user's to see ---------------------------------------------------------


class NotFound(SessionsError):
    status = 404
    default_message = "Not found"


class SessionNotFound(NotFound):
    default_message = "Session not found"


class EntryNotFound(NotFound):
    default_message = "Entry not found"


class TeamNotFound(NotFound):
    default_message = "Team not found"


class ShareNotFound(NotFound):
    default_message = "Share link not found"


class TurnNotFound(NotFound):
    default_message = "Turn not found"


class ImportNotFound(NotFound):
    default_message = "No such import"


# --- 403: seen, but not theirs to do ------------------------------------------------------------------


class SessionForbidden(SessionsError):
    """The user may see the session (or team) but not do this (access/permissions.py)."""

    status = 403
    default_message = "You do not have permission to do that"


class TokenScopeError(SessionForbidden):
    default_message = "This token is read-only"


# --- 400: the request itself is wrong ------------------------------------------------------------------


class InvalidRequest(SessionsError):
    """A form or query that does not hold what the action needs."""


class InvalidEntry(SessionsError):
    """An entry that is not one pi could have written (field, type, nesting)."""


class MemberError(SessionsError):
    """A team membership change that cannot be made (unknown user, last admin, ...)."""


class ImportRejected(SessionsError):
    """The file was refused; extra["errors"] lists every problem with its line number."""


class ImportTooLarge(ImportRejected):
    """Refused for a part over a size limit: the file, a line, what it stores outside entries."""

    status = 413


class BodyTooLarge(SessionsError):
    """A request body over the server's limit for bodies read whole (DATA_UPLOAD_MAX_MEMORY_SIZE)."""

    status = 413

    @classmethod
    def over(cls, limit_bytes: int) -> BodyTooLarge:
        return cls(
            f"The request body is over this server's limit of {limit_bytes / 1048576:g} MiB; "
            "files go to the import, which takes them a block at a time",
            limit_bytes=limit_bytes,
        )


# --- 409: the state does not allow it --------------------------------------------------------------------


class SessionConflict(SessionsError):
    status = 409


class SyncConflict(SessionConflict):
    """A push whose precondition (the stored prefix of the file) does not hold; extra.code says
    which: "offset_mismatch" (send from the server's offset) or "prefix_changed" (never merged)."""


class NothingToCompact(SessionConflict):
    default_message = "Nothing to compact (session too small)"


class ExportTooLarge(SessionConflict):
    """The session has more entries than an HTML export may hold (PIWEB_EXPORT_HTML_MAX_ENTRIES);
    extra: "entries", "limit" and "jsonl", the URL of its JSONL export, which has no limit."""

    default_message = "This session is too large for an HTML export; download it as JSONL instead"


class SearchInvalid(SessionsError):
    """A search query or cursor that cannot be used (a bad date filter, a made-up cursor)."""

    status = 422
    default_message = "The search could not be read"


class SearchTooBroad(SearchInvalid):
    """A search that kept the database busy longer than PIWEB_SEARCH_TIMEOUT_MS: stopped there."""

    default_message = "This search takes too long: add a word or a filter to narrow it"
