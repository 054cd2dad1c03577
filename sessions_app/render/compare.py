"""The compare page's rows: two branches' entries drawn side by side (markup.shown_data, so tool
calls are render/tools.py's with their results under them), a word diff where two paired messages
differ, and each side's usage.

Rows pair the sides' entries in order from the common ancestor. A page draws PAGE entries of each
side, and reads only their lines (and, for the totals, the assistant messages'): "Show more" asks
for the next ones, so two long branches cost one page at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from sessions_app.core import compare, usage
from sessions_app.core.tree import Node, content_text
from sessions_app.render import markup

PAGE = 60  # entries of each side per page


@dataclass(slots=True)
class Cell:
    shown: markup.Shown
    diff: SafeString | None = None  # the text with the words only this side has marked


@dataclass(slots=True)
class Side:
    """One side's totals: what its assistant replies cost (core/usage.py) and how many entries it has."""

    entries: int
    messages: int
    usage: usage.Usage


def side_totals(heads: Sequence[Node], lines: Mapping[str, Mapping[str, Any]]) -> Side:
    """heads: a side's path_heads nodes; lines: the parsed lines of (at least) its assistant messages."""
    messages = sum(1 for n in heads if n.type == "message")
    replies = (usage.entry_usage(lines[n.id]) for n in heads if n.data["role"] == "assistant")
    return Side(len(heads), messages, usage.total(replies))


def replies(heads: Sequence[Node]) -> list[str]:
    """The assistant messages among a side's path_heads nodes: the lines its totals read."""
    return [n.id for n in heads if n.data["role"] == "assistant"]


def _text(node: Node) -> str | None:
    """A user or assistant message's text (what a word diff compares), else None."""
    message = node.data.get("message")
    if node.type != "message" or not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    return content_text(message.get("content"), "\n")


def diff_html(runs: Sequence[tuple[compare.Op, str]]) -> SafeString:
    """A side's runs as HTML: the shared words plain, the words only this side has in <del> (side
    a) or <ins> (side b). Every run is escaped."""
    parts: list[str] = []
    for op, text in runs:
        if op == "=":
            parts.append(escape(text))
        else:
            tag = "del" if op == "-" else "ins"
            parts.append(f'<{tag} class="wd">{escape(text)}</{tag}>')
    return mark_safe("".join(parts))


def _cells(nodes: Sequence[Node]) -> list[Cell]:
    shown = [markup.shown_data(dict(n.data), n.id) for n in nodes]
    return [Cell(s) for s in markup.attach_results([s for s in shown if s.kind != "hidden"])]


Row = tuple[Cell | None, Cell | None]


def rows(a: Sequence[Node], b: Sequence[Node]) -> list[Row]:
    """A page's rows: a and b are the entries it draws of each side (their lines in data). Paired
    messages of one role whose texts differ get a word diff, all of them together within
    compare.PAGE_WORK."""
    texts = {n.id: _text(n) for n in (*a, *b)}
    pairs = list(zip_longest(_cells(a), _cells(b)))
    budget = compare.PAGE_WORK
    for left, right in pairs:
        if left is None or right is None or left.shown.kind != right.shown.kind:
            continue
        old, new = texts.get(left.shown.id), texts.get(right.shown.id)
        if not old or not new or old == new:
            continue
        d = compare.word_diff(old, new, budget=budget)
        budget -= d.work
        left.diff, right.diff = diff_html(d.a), diff_html(d.b)
    return pairs
