"""Entry ids of every shape import accepts (issue 19): the hypothesis strategy the tests share.

Any non-empty string up to piformat.MAX_ID_CHARS that is well-formed UTF-8 and holds no NUL (which
no PostgreSQL text column can store): '/', '?', '#', '%', '&', '=', '+', spaces, quotes, '<>',
backslashes, dots (".." is a path's parent), escapes that look percent-encoded, control
characters, and unicode beyond the BMP."""

from __future__ import annotations

from hypothesis import strategies as st

from sessions_app.core.piformat import MAX_ID_CHARS

SPECIAL = "/?#%&=+ \"'<>\\.;:@!$*()[]{}|^`~,\t\n"
TRICKY = [".", "..", "/", "%", "%2F", "%252F", " ", "  x  ", "a/../b", "?x=1#y", "<b>&amp;</b>", "e-1", "_", "é", "🙂"]

_chars = st.one_of(
    st.sampled_from(SPECIAL),
    st.characters(codec="utf-8", exclude_characters="\x00"),
    st.sampled_from("abc012-"),
)


def entry_ids() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TRICKY), st.text(_chars, min_size=1, max_size=MAX_ID_CHARS))
