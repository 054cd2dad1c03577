"""A branch's "Files changed", as a pull request's: every file its edit and write tool calls touched,
with the net change from the root to the branch tip. Pure.

The rules (a session holds the agent's changes, never the files themselves):
- A call counts only if its result is on the path and is not an error: a failed edit changed
  nothing, and a call without a result never ran (an aborted turn). A file is keyed by the path as
  written, normalised (``./a/b`` is ``a/b``).
- ``write`` sets the file's whole content: the file is shown as that content added (as a new file:
  whatever it held before is unknown), and earlier edits are superseded by it.
- ``edit`` on a file whose content is known (it was written on the path) is applied to it: the net
  change stays one diff from empty to the current content.
- ``edit`` on a file whose content is unknown (never written on the path) is kept as a hunk: its
  oldText -> newText. A later edit whose oldText lies inside an earlier hunk's current text is
  composed into that hunk (the hunk keeps its original "before"), so that editing the same region
  twice shows one net hunk; any other edit adds a hunk. An edit whose oldText is missing from a
  known content adds a hunk the same way.
- A hunk whose before and after are equal is no net change and is dropped; a file with nothing
  left says so (``unchanged``) but still lists the entries that changed it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core.tooluse import Replacement, tool_use


@dataclass(slots=True)
class Hunk:
    before: str
    after: str


@dataclass(slots=True)
class Change:
    """One tool call that changed the file."""

    entry_id: str  # the assistant entry that made the call
    call_id: str
    tool: str  # edit or write


@dataclass(slots=True)
class FileChange:
    path: str
    changes: list[Change] = field(default_factory=list)
    written: str | None = None  # the whole content, when a write on the path made it known
    hunks: list[Hunk] = field(default_factory=list)  # edits on content that is not known

    @property
    def net(self) -> list[Hunk]:
        """The net change: the written file (from empty) and the edit hunks, unchanged ones left out."""
        whole = [Hunk("", self.written)] if self.written is not None else []
        return [h for h in [*whole, *self.hunks] if h.before != h.after]

    @property
    def unchanged(self) -> bool:
        return not self.net


def normal_path(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _apply_known(content: str, edits: Iterable[Replacement]) -> tuple[str, list[Replacement]]:
    """Apply edits, each matched in the original content (as pi does); those not found are returned."""
    spots: list[tuple[int, Replacement]] = []
    missing: list[Replacement] = []
    for e in edits:
        at = content.find(e.old) if e.old else -1
        overlaps = any(at < s + len(o.old) and s < at + len(e.old) for s, o in spots)
        if at < 0 or overlaps:
            missing.append(e)
        else:
            spots.append((at, e))
    for at, e in sorted(spots, key=lambda s: -s[0]):
        content = content[:at] + e.new + content[at + len(e.old) :]
    return content, missing


def _compose(hunks: list[Hunk], edit: Replacement) -> None:
    for h in hunks:
        at = h.after.find(edit.old) if edit.old else -1
        if at >= 0:
            h.after = h.after[:at] + edit.new + h.after[at + len(edit.old) :]
            return
    hunks.append(Hunk(edit.old, edit.new))


def _results(nodes: Iterable[Any]) -> dict[str, bool]:
    """toolCallId -> whether the result on the path is an error."""
    out: dict[str, bool] = {}
    for node in nodes:
        message = node.data.get("message") if node.data.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str):
                out.setdefault(call_id, bool(message.get("isError")))
    return out


def files_changed(nodes: list[Any]) -> list[FileChange]:
    """The files the path's (root-first nodes with .id and .data) edits and writes changed, in the
    order they were first changed."""
    results = _results(nodes)
    files: dict[str, FileChange] = {}
    for node in nodes:
        message = node.data.get("message") if node.data.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            call_id = block.get("id")
            if not isinstance(call_id, str) or results.get(call_id, True):
                continue  # no result on the path, or a failed call: nothing changed
            use = tool_use(str(block.get("name")), block.get("arguments"))
            if use is None or use.tool not in ("edit", "write"):
                continue
            path = normal_path(use.path)
            f = files.setdefault(path, FileChange(path))
            f.changes.append(Change(node.id, call_id, use.tool))
            if use.tool == "write":
                f.written, f.hunks = use.content, []
                continue
            missing = list(use.edits)
            if f.written is not None:
                f.written, missing = _apply_known(f.written, use.edits)
            for e in missing:
                _compose(f.hunks, e)
    return list(files.values())
