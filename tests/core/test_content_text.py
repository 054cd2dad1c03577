"""tree.content_text: the one reading of a message's text blocks, with pi's joiner for each use."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.core.tree import content_text, editor_text, row_text
from tests.builders import entry, user

IMAGE = {"type": "image", "data": "AA==", "mimeType": "image/png"}
BLOCKS = [
    {"type": "text", "text": "one"},
    IMAGE,
    {"type": "thinking", "thinking": "hm"},
    {"type": "text", "text": "two"},
]


def test_string_content_is_the_text_and_text_blocks_are_joined():
    assert content_text("plain", " ") == "plain"
    assert content_text(BLOCKS, "") == "onetwo"
    assert content_text(BLOCKS, "\n") == "one\ntwo"
    assert (
        content_text([{"type": "text"}, {"type": "text", "text": 5}, "x", {"type": "text", "text": "ok"}], "") == "ok"
    )
    assert content_text(None, " ") == content_text({"text": "x"}, " ") == ""


_BLOCK = st.one_of(st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=30)), st.just(IMAGE))


@given(
    st.one_of(st.text(max_size=60), st.lists(_BLOCK, max_size=8)), st.sampled_from(["", " ", "\n"]), st.integers(0, 70)
)
def test_a_limit_gives_the_start_of_the_whole_text(content, joiner, limit):
    assert content_text(content, joiner, limit=limit) == content_text(content, joiner)[:limit]


def test_the_editor_text_of_user_and_custom_messages_joins_with_nothing():
    """pi's navigateTree and fork put the blocks in the editor joined with "", whatever the entry."""
    assert editor_text(entry("u", None, message=user("", content=BLOCKS)["message"])) == "onetwo"
    assert editor_text(entry("c", None, "custom_message", customType="x", content=BLOCKS)) == "onetwo"
    assert editor_text(entry("c", None, "custom_message", customType="x", content="as is")) == "as is"


def test_tree_rows_join_text_blocks_as_pis_tree_does():
    """pi's /tree (tree-selector extractContent) joins with ""; the row text used to join with " "."""
    reply = {"type": "message", "message": {"role": "assistant", "content": BLOCKS, "stopReason": "stop"}}
    assert row_text(reply) == "assistant: onetwo"
    assert row_text(entry("c", None, "custom_message", customType="note", content=BLOCKS)) == "[note]: onetwo"
