"""Payloads, entries and session files, as pi writes them: the one place tests build them.

Payloads (user, assistant, tool_result) are what services.entry_append takes; entry() and header()
are whole file lines; jsonl() makes a file of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sessions_app.core import jsjson

HEX8 = re.compile(r"^[0-9a-f]{8}$")
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SESSION_ID = "3f0c6a52-9a0e-4d7e-8a39-5d2f7b0c1e11"
USAGE = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3}


def user(text: str, ts: int = 1_765_000_000_000, *, content: list[Any] | None = None) -> dict[str, Any]:
    """A `message` entry payload holding a user message (text blocks, or the given content)."""
    blocks = content if content is not None else [{"type": "text", "text": text}]
    return {"type": "message", "message": {"role": "user", "content": blocks, "timestamp": ts}}


def paid(cost: float, tokens: int, *, output: int = 0) -> dict[str, Any]:
    """An assistant message's usage: `tokens` in all (as input), `cost` dollars."""
    return {
        "input": tokens, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": tokens,
        "cost": {"total": cost},
    }  # fmt: skip


def assistant(
    text: str, ts: int = 1_765_000_001_000, *, call: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """An assistant message payload: a text block (and a tool call, if given), claude-sonnet-4-5 by
    default, stopped normally; extra replaces or adds message fields (model, usage, stopReason...)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if call is not None:
        content.append(call)
    message: dict[str, Any] = {
        "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
        "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": "stop", "timestamp": ts,
    }  # fmt: skip
    message.update(extra)
    return {"type": "message", "message": message}


def tool_call(call_id: str, command: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": command}}


def tool_result(call_id: str, text: str, ts: int, *, tool: str = "bash", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "toolResult", "toolCallId": call_id, "toolName": tool, "content": [{"type": "text", "text": text}],
        "isError": False, "timestamp": ts,
    }  # fmt: skip
    message.update(extra)
    return {"type": "message", "message": message}


def header(session_id: str = SESSION_ID, version: int | None = 3, **extra: Any) -> dict[str, Any]:
    """A session header line object (version None: a v1 file's header, which has none)."""
    obj: dict[str, Any] = {"type": "session"}
    if version is not None:
        obj["version"] = version
    obj.update({"id": session_id, "timestamp": "2025-12-08T23:22:54.411Z", "cwd": "/home/u/proj"})
    obj.update(extra)
    return obj


def demo_message(text: str, ts: int = 123) -> dict[str, Any]:
    """An assistant message as piweb's demo model writes it, usage and cost all zero (a turn's partial)."""
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    usage = {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}}
    message: dict[str, Any] = assistant(text, ts, api="demo", provider="piweb", model="piweb-demo", usage=usage)[
        "message"
    ]
    return message


def entry(
    entry_id: str,
    parent_id: str | None,
    kind: str = "message",
    timestamp: str = "2025-12-08T23:23:00.000Z",
    *,
    text: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A v3 entry line object. A `message` without fields gets a user message (saying text)."""
    obj: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    if kind == "message" and "message" not in fields:
        fields["message"] = user(f"text of {entry_id}" if text is None else text)["message"]
    obj.update(fields)
    return obj


def chain(n: int, start: int = 1, parent: str | None = None) -> list[dict[str, Any]]:
    """n linked entries e<start>.. (ids like 'e0000001'), the first a child of parent."""
    out = []
    for i in range(start, start + n):
        out.append(entry(f"e{i:07d}", parent, timestamp=f"2025-12-08T23:{i // 60 % 60:02d}:{i % 60:02d}.000Z"))
        parent = out[-1]["id"]
    return out


def line(obj: Any) -> bytes:
    """obj as JSON.stringify writes it (lone surrogates escaped, JS number forms)."""
    return jsjson.dumps(obj).encode()


def raw(obj: Any) -> str:
    """obj as a stored line (Entry.raw): line() as text."""
    return jsjson.dumps(obj)


def jsonl(*objs: Any) -> bytes:
    """A session file: one line per object (bytes and str lines are used as they are)."""
    out = []
    for o in objs:
        out.append(o if isinstance(o, bytes) else o.encode() if isinstance(o, str) else line(o))
    return b"".join(part + b"\n" for part in out)


def session_id_of(data: bytes) -> str:
    """The session id in a file's header line."""
    return str(json.loads(data.split(b"\n", 1)[0])["id"])


def stored_message(entry: Any) -> dict[str, Any]:
    """The message object of a stored message entry (an Entry row)."""
    data: dict[str, Any] = jsjson.loads(entry.raw)["message"]
    return data
