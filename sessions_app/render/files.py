"""A branch's files changed (core/files_changed.py) as the page draws them: per file, its net diff
hunks highlighted (render/tools.py), the line counts, and the calls that changed it."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.safestring import SafeString

from sessions_app.core.files_changed import Change, FileChange
from sessions_app.render import tools

FILE_LINES = 400  # diff lines drawn per file; the rest is counted, not drawn


@dataclass(slots=True)
class FileShown:
    path: str
    hunks: list[SafeString]
    added: int
    removed: int
    cut: int  # diff lines not drawn
    changes: list[Change]
    whole: bool  # written on the path: the diff is the whole file


def files_shown(files: list[FileChange], *, cap: int = FILE_LINES) -> list[FileShown]:
    out = []
    for f in files:
        shown = FileShown(f.path, [], 0, 0, 0, f.changes, f.written is not None)
        left = cap
        for hunk in f.net:
            d = tools.diff_html(hunk.before, hunk.after, f.path, cap=left)
            shown.added, shown.removed = shown.added + d.added, shown.removed + d.removed
            if left > 0:
                shown.hunks.append(d.html)
            drawn = min(left, d.rows)
            shown.cut += d.rows - drawn
            left -= drawn
        out.append(shown)
    return out
