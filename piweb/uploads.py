"""Large uploads through daphne without Twisted's form parsing.

daphne hands each request body to Django untouched, but its request class is Twisted's, which
first parses any multipart/form-data body into request.args with the email package: for a 110 MB
pi session file that is ~2.5 s and several copies of the file in memory, for args daphne never
reads (Django parses the upload itself). Twisted has a switch for it, parsePOSTFormSubmission;
daphne does not pass it, so install() makes False its default for daphne's requests.

Then daphne reads the whole body (which Twisted keeps in a temporary file past 100 KB) into the
application's input queue at once, before Django reads any of it: a 1 GB upload would sit in
memory whole. install() also gives each request a BodyQueue: a body chunk is queued as its size
only, and read from the temporary file when the application asks for it (Django then spools it
to its own temporary file, a chunk at a time).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from typing import Any

_LAZY = "_piweb_body_size"


class BodyQueue(asyncio.Queue[dict[str, Any]]):
    """One request's input queue whose body chunks are read from the request's file on get(),
    up to COALESCE bytes at a time (daphne queues 8 KiB chunks), yielding to the event loop after
    each: Django's ASGI handler reads a body in a loop that would otherwise hold the loop (and
    every other request) until the last byte of a 1 GB upload."""

    def __init__(self, content: Any) -> None:
        super().__init__()
        self._content = content
        self._offset = 0
        self._next: dict[str, Any] | None = None  # a message taken early, to hand out next

    def put_nowait(self, item: dict[str, Any]) -> None:
        if item.get("type") == "http.request" and isinstance(item.get("body"), bytes):
            item = {**item, _LAZY: len(item["body"])}
            del item["body"]
        super().put_nowait(item)

    async def get(self) -> dict[str, Any]:
        if self._next is not None:
            item, self._next = self._next, None
            return item
        item = await super().get()
        size = item.pop(_LAZY, None)
        if size is None:
            return item
        while item.get("more_body") and size < COALESCE and not self.empty():
            following = self.get_nowait()
            if _LAZY not in following:
                self._next = following
                break
            size += following.pop(_LAZY)
            item["more_body"] = following.get("more_body", False)
        item["body"] = os.pread(self._content.fileno(), size, self._offset) if size else b""
        self._offset += size
        await asyncio.sleep(0)
        return item


# Not more: Django writes each piece to its spooled body file, and on Linux 6.x kernels writes of
# 256 KiB and up were far slower than 64 KiB ones (bench/bench_import_ab.py --api).
COALESCE = 1 << 16


def _file_backed(protocol: Any) -> bool:
    content = getattr(protocol, "content", None)
    try:
        content.fileno()  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):  # a small body: in memory (BytesIO)
        return False
    return True


def install() -> bool:
    """Idempotent; False where daphne or the switch is missing (then nothing changes)."""
    try:
        from daphne.http_protocol import WebRequest
        from twisted.web import http
    except ImportError:
        return False
    if getattr(WebRequest, "_piweb_form_parsing_off", False):
        return True
    if "parsePOSTFormSubmission" not in inspect.signature(http.Request.__init__).parameters:
        return False
    original = WebRequest.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parsePOSTFormSubmission", False)
        original(self, *args, **kwargs)

    WebRequest.__init__ = __init__
    WebRequest._piweb_form_parsing_off = True
    _lazy_bodies()
    return True


def _lazy_bodies() -> None:
    """daphne's Server.create_application (daphne 4), with a BodyQueue for a request whose body is
    a file: the same steps, only the queue differs."""
    from daphne.server import Server

    original = Server.create_application

    @functools.wraps(original)
    def create_application(self: Any, protocol: Any, scope: Any) -> Any:
        if not _file_backed(protocol):
            return original(self, protocol, scope)
        assert "application_instance" not in self.connections[protocol]
        input_queue = BodyQueue(protocol.content)
        scope.setdefault("asgi", {"version": "3.0"})
        application_instance = self.application(
            scope=scope, receive=input_queue.get, send=functools.partial(self.handle_reply, protocol)
        )
        if protocol not in self.connections:
            return None
        self.connections[protocol]["application_instance"] = asyncio.ensure_future(
            application_instance, loop=asyncio.get_event_loop()
        )
        return input_queue

    Server.create_application = create_application
