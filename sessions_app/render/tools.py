"""pi's built-in tool calls as HTML a reviewer reads (as pi's own HTML export draws them, with
highlighting): an edit as a diff of oldText -> newText, a write as the highlighted file, a read as
its path and range (its excerpt is the result, markup.attach_results), a bash call as the command.

Every piece of session text reaches the HTML through pygments (which escapes) or django's escape;
the tags are ours. Long diffs and files are cut at a line count; the session page's "Show all"
fetches the whole (web/views.call_response).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight as pyg_highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexer import Lexer  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

from sessions_app.core.tooluse import Replacement, ToolUse, line_diff, read_range, split_lines, tool_use

DIFF_LINES = 120  # diff lines drawn inline; "Show all" draws the rest
FILE_LINES = 40  # a written file's lines drawn inline
FULL_LINES = 20_000  # even "Show all" stops somewhere
MAX_HIGHLIGHT = 200_000  # longer texts are drawn plain (pygments is slow on huge inputs)

_FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=256)
def _lexer_for(name: str) -> Lexer | None:
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def lexer_for(path: str) -> Lexer | None:
    """The lexer of a file's name (by its extension, or its whole name: Makefile, Dockerfile)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return _lexer_for(("x" + name[name.rfind(".") :]) if "." in name[1:] else name)


def highlighted_lines(text: str, lexer: Lexer | None) -> list[str]:
    """text's lines (split_lines) as HTML, each one balanced (pygments closes its spans at every
    line end), escaped."""
    lines = split_lines(text)
    if lexer is None or len(text) > MAX_HIGHLIGHT or not lines:
        return [escape(line) for line in lines]
    out = pyg_highlight("\n".join(lines) + "\n", lexer, _FORMATTER).split("\n")
    return out[: len(lines)] if len(out) >= len(lines) else [escape(line) for line in lines]


@dataclass(slots=True)
class CallView:
    html: SafeString
    summary: str  # a one-line gist for the collapsed call
    truncated: bool = False
    path: str = ""  # the file, for highlighting a read's excerpt


def _diff(use: ToolUse, lexer: Lexer | None, cap: int) -> tuple[str, int, int, int]:
    """The diff rows (at most cap of them), lines added and removed, and how many rows there are."""
    rows: list[str] = []
    added = removed = 0
    for n, e in enumerate(use.edits):
        d = line_diff(e.old, e.new)
        added, removed = added + d.added, removed + d.removed
        old_html, new_html = highlighted_lines(e.old, lexer), highlighted_lines(e.new, lexer)
        if n:
            rows.append('<span class="dl gap">⋯</span>')
        for line in d.lines:
            if line.op == "+" and line.new is not None:
                rows.append(f'<span class="dl add"><span class="sg">+</span>{new_html[line.new]}</span>')
            elif line.op == "-" and line.old is not None:
                rows.append(f'<span class="dl del"><span class="sg">-</span>{old_html[line.old]}</span>')
            elif line.new is not None:
                rows.append(f'<span class="dl"><span class="sg"> </span>{new_html[line.new]}</span>')
    return "".join(rows[:cap]), added, removed, len(rows)


@dataclass(slots=True)
class DiffShown:
    html: SafeString
    added: int
    removed: int
    rows: int  # all of them; at most cap drawn


def diff_html(before: str, after: str, path: str, *, cap: int = DIFF_LINES) -> DiffShown:
    """One before -> after hunk as a highlighted diff (the files-changed view's)."""
    use = ToolUse("edit", path=path, edits=(Replacement(before, after),))
    body, added, removed, rows = _diff(use, lexer_for(path), cap)
    return DiffShown(mark_safe(f'<pre class="hl diff"><code>{body}</code></pre>'), added, removed, rows)


def _file(content: str, lexer: Lexer | None, cap: int) -> tuple[str, bool]:
    lines = highlighted_lines(content, lexer)
    rows = [f'<span class="dl"><span class="ln">{i}</span>{html}</span>' for i, html in enumerate(lines[:cap], 1)]
    return "".join(rows), len(lines) > cap


def _path_html(use: ToolUse, extra: str = "") -> str:
    return f'<div class="tool-path mono">{escape(use.path)}{escape(extra)}</div>'


def call_view(name: str, args: object, *, full: bool = False) -> CallView | None:
    """A built-in tool call drawn for a reviewer, or None (another tool: the generic view)."""
    use = tool_use(name, args)
    if use is None:
        return None
    if use.tool == "bash":
        timeout = f'<span class="muted small">timeout {use.timeout:g}s</span>' if use.timeout else ""
        cmd = "".join(f"{line}\n" for line in highlighted_lines(use.command, get_lexer_by_name("bash")))
        html = f'<pre class="hl tool-command"><code><span class="sg">$ </span>{cmd}</code></pre>{timeout}'
        return CallView(mark_safe(html), " ".join(use.command.split()))
    lexer = lexer_for(use.path)
    if use.tool == "edit":
        cap = FULL_LINES if full else DIFF_LINES
        body, added, removed, rows = _diff(use, lexer, cap)
        cut = rows > cap
        stat = f"+{added} -{removed}"
        html = f'{_path_html(use)}<pre class="hl diff"><code>{body}</code></pre>'
        return CallView(mark_safe(html), f"{use.path} {stat}", cut, use.path)
    if use.tool == "write":
        body, cut = _file(use.content, lexer, FULL_LINES if full else FILE_LINES)
        count = len(split_lines(use.content))
        html = f'{_path_html(use)}<pre class="hl file"><code>{body}</code></pre>'
        return CallView(mark_safe(html), f"{use.path} ({count} line{'s' if count != 1 else ''})", cut, use.path)
    where = read_range(use)
    return CallView(mark_safe(_path_html(use, where)), use.path + where, path=use.path)


def excerpt_html(text: str, path: str) -> SafeString:
    """A read's result (the excerpt), highlighted as its file."""
    lines = highlighted_lines(text, lexer_for(path))
    return mark_safe('<pre class="hl output excerpt"><code>' + "\n".join(lines) + "</code></pre>")
