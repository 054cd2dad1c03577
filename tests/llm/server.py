"""A scripted local HTTP server speaking the real streaming protocols (OpenAI SSE, Anthropic SSE).

Each test queues replies; every request takes the next one. Bodies are sent with chunked transfer
encoding, so closing the socket mid-body is a genuine disconnect the client must notice.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """An SSE response: events are (delay seconds, raw text) pairs, sent one chunk each."""

    events: list[tuple[float, str]]
    disconnect_after: int | None = None  # close the socket after this many events
    status: int = 200


@dataclass
class Fail:
    status: int
    body: dict[str, Any]
    echo_auth: bool = False  # put the request's credentials into the body (tests redaction)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


def openai_sse(*chunks: dict[str, Any], delay: float = 0.0, done: bool = True) -> list[tuple[float, str]]:
    events = [(delay, f"data: {json.dumps(c)}\n\n") for c in chunks]
    return events + ([(0.0, "data: [DONE]\n\n")] if done else [])


def anthropic_sse(*events: dict[str, Any], delay: float = 0.0) -> list[tuple[float, str]]:
    return [(delay, f"event: {e['type']}\ndata: {json.dumps(e)}\n\n") for e in events]


class ScriptedServer:
    def __init__(self) -> None:
        self.replies: list[Stream | Fail] = []
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self.finished = threading.Event()  # set when a handler ends (normally, or the client went away)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                try:
                    outer._handle(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    outer.finished.set()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> ScriptedServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        self.requests.append(Request(h.path, headers, json.loads(raw) if raw else None))
        reply = self.replies.pop(0)
        if isinstance(reply, Fail):
            body = json.loads(json.dumps(reply.body))
            if reply.echo_auth:  # like a careless proxy that quotes the credentials it rejected
                sent = headers.get("authorization") or headers.get("x-api-key")
                body["error"]["message"] += f" (credentials: {sent})"
            data = json.dumps(body).encode()
            h.send_response(reply.status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
            return
        h.send_response(reply.status)
        h.send_header("content-type", "text/event-stream")
        h.send_header("transfer-encoding", "chunked")
        h.send_header("cache-control", "no-cache")
        h.end_headers()
        for n, (delay, text) in enumerate(reply.events):
            if reply.disconnect_after is not None and n == reply.disconnect_after:
                h.wfile.flush()
                h.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a broken body
                h.close_connection = True
                return
            if delay and self.stopping.wait(delay):
                return
            data = text.encode()
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False
