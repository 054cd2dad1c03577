"""Small builders and invariant checks shared by the store and service tests."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sessions_app.core import jsjson
from sessions_app.core.tree import Node
from sessions_app.models import Entry, Session
from sessions_app.store import selectors

HEX8 = re.compile(r"^[0-9a-f]{8}$")
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SESSION_ID = "3f0c6a52-9a0e-4d7e-8a39-5d2f7b0c1e11"


def user(text: str, ts: int = 1_765_000_000_000) -> dict[str, Any]:
    """A `message` entry payload holding a user message, as pi writes them."""
    return {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts},
    }


def assistant(text: str, model: str = "claude-sonnet-4-5", ts: int = 1_765_000_001_000) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": model,
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
            "stopReason": "stop",
            "timestamp": ts,
        },
    }


def header(session_id: str = SESSION_ID, version: int | None = 3, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"type": "session"}
    if version is not None:
        obj["version"] = version
    obj.update({"id": session_id, "timestamp": "2025-12-08T23:22:54.411Z", "cwd": "/home/u/proj"})
    obj.update(extra)
    return obj


def entry(
    entry_id: str,
    parent_id: str | None,
    kind: str = "message",
    timestamp: str = "2025-12-08T23:23:00.000Z",
    **fields: Any,
) -> dict[str, Any]:
    """A v3 entry line object. A `message` without fields gets a user message."""
    obj: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    if kind == "message" and "message" not in fields:
        fields["message"] = user(f"text of {entry_id}")["message"]
    obj.update(fields)
    return obj


def line(obj: Any) -> bytes:
    """obj as JSON.stringify writes it (lone surrogates escaped, JS number forms)."""
    return jsjson.dumps(obj).encode()


def jsonl(*objs: Any) -> bytes:
    """A session file: one compact JSON line per object (bytes are used as they are)."""
    return b"".join((o if isinstance(o, bytes) else line(o)) + b"\n" for o in objs)


def chain(n: int, start: int = 1, parent: str | None = None) -> list[dict[str, Any]]:
    """n linked entries e<start>.. (ids like 'e0000001'), the first a child of parent."""
    out = []
    for i in range(start, start + n):
        out.append(entry(f"e{i:07d}", parent, timestamp=f"2025-12-08T23:{i // 60 % 60:02d}:{i % 60:02d}.000Z"))
        parent = out[-1]["id"]
    return out


def counts() -> tuple[int, int]:
    return Session.objects.count(), Entry.objects.count()


def rows(session: Session) -> list[Entry]:
    return list(Entry.objects.filter(session=session).order_by("seq"))


def snapshot(session: Session) -> list[tuple[Any, ...]]:
    """Every stored column of every entry of the session, to prove nothing changed."""
    return list(Entry.objects.filter(session=session).order_by("seq").values_list())


def nodes(session: Session) -> list[Node]:
    return [selectors.entry_node(e) for e in rows(session)]


def objects(session: Session) -> list[dict[str, Any]]:
    return [json.loads(e.raw) for e in rows(session)]


def export_bytes(session: Session) -> bytes:
    return "".join(selectors.export_lines(session=session)).encode()


def assert_tree(session: Session, *, expected: int | None = None) -> list[Entry]:
    """The session is a sound tree: seq dense 1..N, ids unique, every parent stored, leaf valid,
    raw lines agree with the indexed columns, depth = parent depth + 1."""
    session = Session.objects.get(pk=session.pk)
    stored = rows(session)
    if expected is not None:
        assert len(stored) == expected
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert session.last_seq == len(stored)
    by_id = {e.entry_id: e for e in stored}
    assert len(by_id) == len(stored), "duplicate entry ids"
    for e in stored:
        data = json.loads(e.raw)
        assert (data["id"], data["parentId"], data["type"]) == (e.entry_id, e.parent_id, e.type)
        if e.parent_id is None:
            assert e.depth == 0
        else:
            assert e.parent_id in by_id, f"{e.entry_id}: parent {e.parent_id} missing"
            parent = by_id[e.parent_id]
            assert parent.seq < e.seq, "a parent is stored after its child"
            assert e.depth == parent.depth + 1
        if e.type == "label":
            assert data["targetId"] in by_id
    assert session.leaf_id is None or session.leaf_id in by_id
    return stored


def keys(entry_row: Entry) -> list[str]:
    return list(json.loads(entry_row.raw))


def problems(exc_info: Any) -> list[tuple[int, str]]:
    return [(e["line"], e["message"]) for e in exc_info.value.extra["errors"]]


def lines_of(problems_list: Iterable[Mapping[str, Any]]) -> list[int]:
    return [p["line"] for p in problems_list]
