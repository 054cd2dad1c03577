"""A branched session built with the real services, and helpers for the view tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sessions_app.models import Session
from sessions_app.store import services


def user(text: str, ts: int) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts},
    }


def assistant(text: str, ts: int, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant", "content": [{"type": "text", "text": text}], "provider": "anthropic",
        "model": "claude-sonnet-4-5", "api": "anthropic-messages", "stopReason": "stop", "timestamp": ts,
    }  # fmt: skip
    message.update(extra)
    return {"type": "message", "message": message}


@dataclass
class Tree:
    session: Session
    ids: dict[str, str]


@pytest.fixture
def tree(alice) -> Tree:
    """u1 - a1 - u2a - a2a - tool call/result - a3a (leaf, first branch)
                \\ u2b - a2b   (second branch, newer)
    The session leaf is put back on a3a; u1 carries a label."""
    s = services.session_create(owner=alice, name="Branchy session", cwd="/work/demo")
    ids: dict[str, str] = {}

    def add(key: str, payload: dict[str, Any], parent: str | None = None) -> None:
        kw: dict[str, Any] = {"parent_id": ids[parent]} if parent else {}
        ids[key] = services.entry_append(session=s, payload=payload, author=alice, **kw).entry_id

    add("model", {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    add("u1", user("How do I **parse** JSONL?", 1_767_600_000_000))
    add(
        "a1",
        assistant("Read it line by line:\n\n```python\nfor line in f:\n    json.loads(line)\n```", 1_767_600_001_000),
    )
    add("u2a", user("And in Rust?", 1_767_600_002_000))
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "cargo new demo"}}
    add("a2a", {"type": "message", "message": {"role": "assistant", "content": [call], "provider": "anthropic",
                                               "model": "claude-sonnet-4-5", "api": "anthropic-messages",
                                               "stopReason": "toolUse", "timestamp": 1_767_600_003_000}})  # fmt: skip
    long_output = "\n".join(f"line {k}" for k in range(200))
    add("tool", {"type": "message", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                                                "content": [{"type": "text", "text": long_output}], "isError": False,
                                                "timestamp": 1_767_600_004_000}})  # fmt: skip
    add("a3a", assistant("Use serde_json.", 1_767_600_005_000))
    add("u2b", user("And in Go?", 1_767_600_006_000), parent="a1")
    add("a2b", assistant("Use bufio.Scanner.", 1_767_600_007_000))
    services.label_set(session=s, target_id=ids["u1"], label="question", author=alice)
    services.leaf_move(session=s, entry_id=ids["a3a"])
    s.refresh_from_db()
    return Tree(s, ids)


def detail(tree: Tree, **params: str) -> str:
    from urllib.parse import urlencode

    url = f"/sessions/{tree.session.public_id}/"
    return url + ("?" + urlencode(params) if params else "")
