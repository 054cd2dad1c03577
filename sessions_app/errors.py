"""The app's errors. Views and the API map them to responses in one place each."""

from __future__ import annotations

from typing import Any


class SessionsError(Exception):
    status = 400

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "extra": self.extra}


class SessionNotFound(SessionsError):
    status = 404

    def __init__(self, message: str = "Session not found", **extra: Any) -> None:
        super().__init__(message, **extra)


class EntryNotFound(SessionsError):
    status = 404


class InvalidEntry(SessionsError):
    status = 400


class SessionConflict(SessionsError):
    status = 409


class ImportRejected(SessionsError):
    """The file was refused; extra["errors"] lists every problem with its line number."""

    status = 400


class SessionForbidden(SessionsError):
    """The user may see the session but not do this (access.py); missing access is SessionNotFound."""

    status = 403

    def __init__(self, message: str = "You do not have permission to do that", **extra: Any) -> None:
        super().__init__(message, **extra)
