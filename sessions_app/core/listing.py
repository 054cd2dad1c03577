"""The session-listing fields pi shows (name, message count, first message, modified), kept up
to date one entry at a time. Pure: used on Session rows and by the import worker alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sessions_app.core.tree import content_text, js_trim, parse_timestamp_ms
from sessions_app.core.usage import cost_and_tokens

MAX_TOTAL = 2**62  # a session's token total stops here (a 64-bit column; a hostile file could pass it)


class Listed(Protocol):
    name: str
    message_count: int
    first_message: str
    modified_ms: int
    cost: float  # usage.cost.total summed over every assistant message (core/usage.py)
    total_tokens: int


@dataclass(slots=True)
class Listing:
    name: str = ""
    message_count: int = 0
    first_message: str = ""
    modified_ms: int = 0
    cost: float = 0.0
    total_tokens: int = 0


def session_file_stem(created: str, session_id: str) -> str:
    """The name pi gives a session's file, without ".jsonl": the header timestamp with ":" and "."
    made "-", "_", the session id (session-manager.ts). Quotes and control characters are left out,
    so that it can name a download."""
    stem = f"{created.replace(':', '-').replace('.', '-')}_{session_id}"
    return "".join(c for c in stem if c != '"' and c.isprintable())


def storable(text: str) -> str:
    """text with unpaired UTF-16 surrogates as U+FFFD. JSON may hold them ("\\ud800", which
    JSON.stringify writes for a string cut inside a pair); UTF-8 databases refuse them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def update_listing(listed: Listed, data: Mapping[str, Any]) -> None:
    kind = data["type"]
    if kind == "message":  # (most entries: this runs for every entry of an import)
        message = data["message"]
        listed.message_count += 1
        role = message.get("role")
        if role != "user" and role != "assistant":
            return
        ts = message.get("timestamp")
        ms = ts if type(ts) is int or type(ts) is float else parse_timestamp_ms(data["timestamp"])
        if ms and ms > listed.modified_ms:
            listed.modified_ms = int(ms)
        if role == "assistant":
            cost, tokens = cost_and_tokens(message.get("usage"))
            listed.cost += cost
            listed.total_tokens = min(listed.total_tokens + int(tokens), MAX_TOTAL)
        elif not listed.first_message:
            listed.first_message = storable(content_text(message.get("content"), " "))
    elif kind == "session_info":
        # pi lists the latest session_info's name: an empty or missing one clears it.
        name = data.get("name")
        listed.name = storable(js_trim(name)) if isinstance(name, str) else ""
