"""The tree's default filter hides exactly the assistant replies without text (pi's rule)."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.store import services
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db


def test_a_reply_starting_with_a_bracket_is_shown_and_a_tool_call_only_reply_is_hidden(alice, htmx_client) -> None:
    s = services.session_create(owner=alice, name="brackets")
    ids: dict[str, str] = {}

    def add(key: str, payload: dict[str, Any]) -> None:
        ids[key] = services.entry_append(session=s, payload=payload, author=alice).entry_id

    add("u1", user("list them", 1_767_600_000_000))
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "notes.md"}}
    add("calls", assistant("", 1_767_600_001_000, content=[call], stopReason="toolUse"))
    add("result", {"type": "message", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                                  "content": [{"type": "text", "text": "a, b"}], "isError": False,
                                                  "timestamp": 1_767_600_002_000}})  # fmt: skip
    add("bracket", assistant("[1] a\n[2] b", 1_767_600_003_000))
    add("cut", assistant("", 1_767_600_004_000, content=[call], stopReason="length"))
    add("u2", user("thanks", 1_767_600_005_000))
    html = htmx_client.get(f"/sessions/{s.public_id}/", headers={"HX-Target": "tree-body"}).content.decode()
    assert f'id="t-{ids["bracket"]}"' in html
    assert "[1] a [2] b" in html
    assert f'id="t-{ids["cut"]}"' in html  # stopped at the length limit: pi shows it
    assert f'id="t-{ids["calls"]}"' not in html
    assert f'id="t-{ids["result"]}"' in html
    # the current leaf is always shown, text or not
    services.leaf_move(session=s, entry_id=ids["calls"])
    html = htmx_client.get(f"/sessions/{s.public_id}/", headers={"HX-Target": "tree-body"}).content.decode()
    assert f'id="t-{ids["calls"]}"' in html
    assert "assistant ·" not in html  # the row shows the calls, not the marker
