"""pi's built-in tools as a reviewer reads them: a tool call's arguments read into what it did
(edit: replacements in a file; write: a whole file; read: a file excerpt; bash: a command), and a
line diff of a replacement. Pure: the HTML is render/tools.py's.

The argument shapes are pi's: ``edit`` {path, oldText, newText} or, in later versions,
{path, edits: [{oldText, newText}]} (each edit matched against the original file); ``write``
{path, content}; ``read`` {path, offset?, limit?}; ``bash`` {command, timeout?}. pi also accepts
``file_path`` for ``path``. Anything else (or a malformed call) is None: the generic view.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

BUILTIN = ("edit", "write", "read", "bash")


@dataclass(frozen=True, slots=True)
class Replacement:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    tool: Literal["edit", "write", "read", "bash"]
    path: str = ""
    edits: tuple[Replacement, ...] = ()  # edit
    content: str = ""  # write
    offset: int | None = None  # read
    limit: int | None = None  # read
    command: str = ""  # bash
    timeout: float | None = None  # bash


def _path(args: dict[str, Any]) -> str | None:
    for key in ("path", "file_path"):
        if isinstance(args.get(key), str) and args[key]:
            return str(args[key])
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _edits(args: dict[str, Any]) -> tuple[Replacement, ...] | None:
    listed = args.get("edits")
    if isinstance(listed, list):
        out = []
        for e in listed:
            if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("oldText", "newText")):
                return None
            out.append(Replacement(e["oldText"], e["newText"]))
        return tuple(out) if out else None
    if isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str):
        return (Replacement(args["oldText"], args["newText"]),)
    return None


def tool_use(name: str, args: Any) -> ToolUse | None:
    """What a built-in tool call did, or None for another tool or arguments of another shape."""
    if name not in BUILTIN or not isinstance(args, dict):
        return None
    if name == "bash":
        if not isinstance(args.get("command"), str):
            return None
        return ToolUse("bash", command=args["command"], timeout=_number(args.get("timeout")))
    path = _path(args)
    if path is None:
        return None
    if name == "edit":
        edits = _edits(args)
        return ToolUse("edit", path=path, edits=edits) if edits else None
    if name == "write":
        return ToolUse("write", path=path, content=args["content"]) if isinstance(args.get("content"), str) else None
    offset, limit = _number(args.get("offset")), _number(args.get("limit"))
    return ToolUse(
        "read", path=path, offset=int(offset) if offset is not None else None, limit=int(limit) if limit else None
    )


def read_range(use: ToolUse) -> str:
    """ ":12-31" for a read with an offset or a limit (pi's lines are 1-based), as pi's export."""
    if use.offset is None and use.limit is None:
        return ""
    start = use.offset or 1
    return f":{start}-{start + use.limit - 1}" if use.limit else f":{start}"


# --- line diffs ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiffLine:
    op: Literal[" ", "-", "+", "@"]  # context, removed, added, a gap between hunks
    old: int | None  # the line's index in the old text's lines (None: added or a gap)
    new: int | None  # in the new text's lines (None: removed or a gap)


@dataclass(slots=True)
class Diff:
    old_lines: list[str]
    new_lines: list[str]
    lines: list[DiffLine] = field(default_factory=list)
    added: int = 0
    removed: int = 0


def split_lines(text: str) -> list[str]:
    """A text's lines without their ends; "" has none, and a final newline adds no empty line."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


# Line pairs difflib may compare (its cost grows with their product, and a session's text is
# anyone's): beyond, the lines between the common head and tail are drawn as one replacement.
DIFF_WORK = 4_000_000


def trimmed_opcodes(a: list[str], b: list[str], context: int | None) -> list[tuple[str, int, int, int, int]]:
    """The common head and tail kept, the middle replaced: linear in the lines, whatever they hold."""
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    keep_head = head if context is None else min(head, context)
    keep_tail = tail if context is None else min(tail, context)
    ops: list[tuple[str, int, int, int, int]] = []
    if keep_head:
        ops.append(("equal", head - keep_head, head, head - keep_head, head))
    if head < len(a) - tail or head < len(b) - tail:
        ops.append(("replace", head, len(a) - tail, head, len(b) - tail))
    if keep_tail:
        ops.append(("equal", len(a) - tail, len(a) - tail + keep_tail, len(b) - tail, len(b) - tail + keep_tail))
    return ops


def line_diff(old: str, new: str, *, context: int | None = None) -> Diff:
    """old -> new line by line (difflib). context: unchanged lines kept around each change (None:
    all of them, as an edit's oldText is the changed region already)."""
    a, b = split_lines(old), split_lines(new)
    diff = Diff(a, b)
    groups: list[list[tuple[str, int, int, int, int]]]
    if len(a) * len(b) > DIFF_WORK:
        groups = [trimmed_opcodes(a, b, context)]
    else:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        groups = [list(matcher.get_opcodes())] if context is None else list(matcher.get_grouped_opcodes(context))
    for g, group in enumerate(groups):
        if g:
            diff.lines.append(DiffLine("@", None, None))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                diff.lines.extend(DiffLine(" ", i, j1 + (i - i1)) for i in range(i1, i2))
                continue
            if tag in ("replace", "delete"):
                diff.lines.extend(DiffLine("-", i, None) for i in range(i1, i2))
                diff.removed += i2 - i1
            if tag in ("replace", "insert"):
                diff.lines.extend(DiffLine("+", None, j) for j in range(j1, j2))
                diff.added += j2 - j1
    return diff
