"""tree.row_text: the preview of an assistant message tells exactly whether pi's /tree hides it."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import explorer
from sessions_app.tree import TEXTLESS_PREFIX, row_text


def reply(content: Any, stop: str | None = "stop", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if stop is not None:
        message["stopReason"] = stop
    return {"type": "message", "message": message}


CALL = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls -la"}}


@pytest.mark.parametrize(
    ("data", "preview", "hidden"),
    [
        (reply([{"type": "text", "text": "[1] see the list"}]), "assistant: [1] see the list", False),
        (reply("[draft] a string reply"), "assistant: [draft] a string reply", False),
        (reply([{"type": "text", "text": "(no content)"}]), "assistant: (no content)", False),
        (reply([CALL], "toolUse"), TEXTLESS_PREFIX + "[bash: ls -la]", True),
        (reply([CALL, {"type": "text", "text": "  \n "}], "toolUse"), TEXTLESS_PREFIX + "[bash: ls -la]", True),
        (reply([], "stop"), TEXTLESS_PREFIX + "(no content)", True),
        (reply([{"type": "thinking", "thinking": "hmm"}], None), TEXTLESS_PREFIX + "(no content)", True),
        (reply([CALL], "length"), "assistant: [bash: ls -la]", False),
        (reply([], "length"), "assistant: (no content)", False),
        (reply([], "aborted"), "assistant: (aborted)", False),
        (reply([], "error", errorMessage="[529] overloaded"), "assistant: [529] overloaded", False),
    ],
)
def test_the_preview_says_exactly_which_replies_are_hidden(data, preview, hidden):
    assert row_text(data) == preview
    assert explorer._empty("assistant", preview) is hidden


def test_no_text_reply_can_look_hidden():
    for text in ("assistant · x", TEXTLESS_PREFIX, "· [read]", "\n\t[x]"):
        assert not row_text(reply([{"type": "text", "text": text}])).startswith(TEXTLESS_PREFIX), text


def test_other_roles_never_count_as_hidden_assistants():
    assert not explorer._empty("user", TEXTLESS_PREFIX + "x")
    assert not explorer._empty(None, TEXTLESS_PREFIX + "x")
