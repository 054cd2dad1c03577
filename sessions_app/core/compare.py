"""Two branches side by side, pure: where two paths part (tree.common_ancestor, the one rule), what
each side holds after that, and a word diff of two texts with its work bounded.

The sides are root-first, each from just after the common ancestor down to its own end. With no
common ancestor (two roots) each side is its whole path.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sessions_app.core.tooluse import trimmed_opcodes
from sessions_app.core.tree import Node, common_ancestor, index


@dataclass(frozen=True, slots=True)
class Split:
    ancestor_id: str | None
    a: list[Node]
    b: list[Node]


def split_paths(path_a: Sequence[Node], path_b: Sequence[Node]) -> Split:
    """Both root-first paths cut below their common ancestor. The index holds just the two paths:
    all that common_ancestor walks, since each path ends at its root (or at a missing parent)."""
    idx = index({n.id: n for n in (*path_a, *path_b)}.values())
    ancestor = common_ancestor(idx, path_a[-1].id if path_a else None, path_b[-1].id if path_b else None)
    return Split(ancestor, _below(path_a, ancestor), _below(path_b, ancestor))


def _below(path: Sequence[Node], ancestor: str | None) -> list[Node]:
    if ancestor is None:
        return list(path)
    ids = [n.id for n in path]
    return list(path[ids.index(ancestor) + 1 :])


# --- word diff -----------------------------------------------------------------------------------

# Word pairs difflib may compare for one pair of texts, and for a whole page of them: a session's
# text is anyone's, and difflib's cost grows with the product. Beyond, the words between the
# common head and tail are one replacement (tooluse.trimmed_opcodes, as a line diff does).
WORD_WORK = 250_000
PAGE_WORK = 2_000_000

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")

Op = Literal["=", "-", "+"]


@dataclass(slots=True)
class WordDiff:
    a: list[tuple[Op, str]]  # side a's text in runs: "=" shared, "-" only on a
    b: list[tuple[Op, str]]  # side b's: "=" shared, "+" only on b
    work: int  # the word pairs it cost (len(a) * len(b), or 0 when trimmed)


def words(text: str) -> list[str]:
    """text cut into words, runs of spaces and single punctuation marks: joined, text again."""
    return _WORDS.findall(text)


def word_diff(old: str, new: str, *, budget: int = WORD_WORK) -> WordDiff:
    """old -> new word by word; difflib when len(old words) * len(new words) fits in budget
    (and WORD_WORK), else the common head and tail kept and the middle replaced."""
    a, b = words(old), words(new)
    work = len(a) * len(b)
    ops: Sequence[tuple[str, int, int, int, int]]
    if work > min(budget, WORD_WORK):
        ops, work = trimmed_opcodes(a, b, None), 0
    else:
        ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out = WordDiff([], [], work)
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            _push(out.a, "=", a[i1:i2])
            _push(out.b, "=", b[j1:j2])
            continue
        _push(out.a, "-", a[i1:i2])
        _push(out.b, "+", b[j1:j2])
    return out


def _push(runs: list[tuple[Op, str]], op: Op, parts: list[str]) -> None:
    """Append a run, merged with the one before when it has the same op."""
    if not parts:
        return
    text = "".join(parts)
    if runs and runs[-1][0] == op:
        runs[-1] = (op, runs[-1][1] + text)
    else:
        runs.append((op, text))
