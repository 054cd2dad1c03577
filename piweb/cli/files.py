"""pi's session folders as the sync reads them: `<root>/<cwd-encoded>/<timestamp>_<id>.jsonl`."""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def agent_dir() -> Path:
    """pi's agent dir: PI_CODING_AGENT_DIR (with ~ expanded) or ~/.pi/agent."""
    explicit = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(explicit).expanduser() if explicit else Path.home() / ".pi" / "agent"


def default_roots() -> list[Path]:
    return [agent_dir() / "sessions"]


def cwd_dir_name(cwd: str) -> str:
    """pi's folder for a working directory: one leading slash dropped, / \\ : as -, wrapped in --."""
    if cwd[:1] in ("/", "\\"):
        cwd = cwd[1:]
    return "--" + cwd.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def session_files(roots: Sequence[Path], exclude: Sequence[str] = ()) -> Iterator[tuple[Path, Path]]:
    """(root, file) for every *.jsonl under the roots (a root may be one file), sorted, minus the
    excluded (a glob matched against the path under its root, and against the file name)."""
    for root in roots:
        found = [root] if root.is_file() else sorted(root.rglob("*.jsonl"))
        for path in found:
            if path.is_file() and not excluded(root, path, exclude):
                yield root, path


def excluded(root: Path, path: Path, exclude: Sequence[str]) -> bool:
    rel = str(path.relative_to(root)) if path != root else path.name
    return any(fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(path.name, glob) for glob in exclude)


def complete_lines(data: bytes) -> bytes:
    """The file up to its last newline: a torn last line (pi still writing it) waits."""
    return data[: data.rfind(b"\n") + 1]


def header_of(data: bytes) -> dict[str, Any] | None:
    """The session header (the first non-blank complete line), or None if there is none yet."""
    for line in complete_lines(data).split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return None
        if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
            return value
        return None
    return None
