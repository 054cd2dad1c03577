"""tree.row_text: the preview of an assistant message tells exactly whether pi's /tree hides it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sessions_app.core.tree import TEXTLESS_PREFIX, _one_line, row_text
from sessions_app.store import explorer


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


# Pieces of text: words, runs of spaces, and each kind of character split() treats as a space
# (ASCII controls, Latin-1, line and paragraph separators, ideographic) beside printable ones it
# does not (a zero-width space, an accent, an emoji).
_PIECES = ["word", "é", "\U0001f600", "\u200b", " ", "  ", *"\t\n\r\x0b\x1c\x85\xa0\u2028\u3000"]
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=120).map("".join)


@given(st.one_of(_TEXTS, st.text()), st.integers(min_value=1, max_value=300))
@example("a  b", 200)
@example(" a", 200)
@example("a ", 200)
@example("a\xa0b", 200)
def test_one_line_is_the_text_split_and_joined(text, limit):
    """_one_line skips split() for text that is flat already; it must never tell otherwise."""
    flat = " ".join(text[: limit * 2].split())
    assert _one_line(text, limit) == (flat if len(flat) <= limit else flat[: limit - 1] + "\u2026")
