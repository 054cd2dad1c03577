"""A small HTTP client for piweb's REST API (stdlib urllib: the CLI needs nothing else)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib import error, request

from piweb.cli.config import Remote

TIMEOUT_S = 60


class ApiError(Exception):
    """The server answered with an error status; body is its JSON error body (message, extra)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(f"HTTP {status}: {body.get('message', '')}{_first_problem(body)}")

    @property
    def code(self) -> str:
        extra = self.body.get("extra")
        return str(extra.get("code", "")) if isinstance(extra, dict) else ""


def _first_problem(body: dict[str, Any]) -> str:
    """Where the file is wrong, as the server says (its first problem, and how many more)."""
    errors = body.get("errors")
    if not isinstance(errors, list) or not errors or not isinstance(errors[0], dict):
        return ""
    first = errors[0]
    where = f"line {first['line']}: " if first.get("line") else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f": {where}{first.get('message', '')}{more}"


class Offline(Exception):
    """The server could not be reached (down, restarting, network gone)."""


class _Body:
    """A multipart body read in pieces, reporting the file bytes sent (for a progress bar)."""

    def __init__(self, parts: list[bytes | memoryview], progress: Callable[[int], None] | None) -> None:
        self.parts = parts
        self.progress = progress
        self.length = sum(len(p) for p in parts)
        self._pieces = self._each()

    def _each(self) -> Iterator[bytes]:
        for part in self.parts:
            for at in range(0, len(part), 256 * 1024):
                piece = bytes(part[at : at + 256 * 1024])
                if self.progress is not None and isinstance(part, memoryview):
                    self.progress(len(piece))
                yield piece

    def read(self, _size: int = -1) -> bytes:
        return next(self._pieces, b"")


class Client:
    def __init__(self, remote: Remote) -> None:
        self.remote = remote

    def _send(self, req: request.Request) -> Any:
        req.add_header("Authorization", f"Bearer {self.remote.token}")
        req.add_header("Accept", "application/json")
        try:
            return request.urlopen(req, timeout=TIMEOUT_S)
        except error.HTTPError as failed:
            raw = failed.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"message": raw.decode(errors="replace")[:200]}
            raise ApiError(failed.code, body if isinstance(body, dict) else {"message": str(body)}) from None
        except (error.URLError, OSError) as failed:
            raise Offline(f"{self.remote.server}: {getattr(failed, 'reason', failed)}") from None

    def get_json(self, path: str) -> Any:
        with self._send(request.Request(self.remote.server + path)) as response:
            return json.loads(response.read())

    def get_stream(self, path: str) -> Any:
        """The open response (a file-like object) of a GET."""
        return self._send(request.Request(self.remote.server + path))

    def post_file(
        self,
        path: str,
        data: bytes | memoryview,
        form: dict[str, str | int],
        progress: Callable[[int], None] | None = None,
    ) -> Any:
        """POST form fields and `data` as the multipart field `file`; the JSON answer."""
        boundary = uuid.uuid4().hex
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            for name, value in form.items()
        )
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="session.jsonl"\r\n'
            "Content-Type: application/x-ndjson\r\n\r\n"
        ).encode()
        body = _Body([head, memoryview(data), f"\r\n--{boundary}--\r\n".encode()], progress)
        req = request.Request(self.remote.server + path, data=body, method="POST")
        req.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
        req.add_header("Content-Length", str(body.length))
        with self._send(req) as response:
            return json.loads(response.read())
