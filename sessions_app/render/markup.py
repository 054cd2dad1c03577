"""Session text to safe HTML: markdown (markdown-it-py, raw HTML off), nh3 sanitising, pygments.

Every string that comes from a session reaches a template either through Django's autoescaping or
through ``markdown()`` here, which escapes raw HTML and then sanitises the result with nh3.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight as pyg_highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

from sessions_app.core import jsjson
from sessions_app.core.tree import content_text, editor_text, js_trim
from sessions_app.render import tools

TRUNCATE_CHARS = 2000
TRUNCATE_LINES = 40
MAX_HIGHLIGHT = 20_000  # longer code is shown plain (pygments is slow on huge inputs)

_FORMATTER = HtmlFormatter(nowrap=True)
_TAGS = {
    "a",
    "b",
    "blockquote",
    "br",
    "code",
    "del",
    "div",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "input",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
_ATTRS = {
    "a": {"href", "title"},
    "span": {"class"},
    "pre": {"class"},
    "div": {"class"},
    "code": {"class"},
}
# A table column's alignment: a class (the CSP allows no inline style), set by _align_classes.
_ALIGN = {"align-left", "align-center", "align-right"}
_CLASSES = {"th": _ALIGN, "td": _ALIGN, "li": {"task"}}
# The only input the sanitiser keeps is a task list's disabled checkbox (see _task_lists).
_INPUT_VALUES = {"input": {"checked": {"", "checked"}}}
_INPUT_SET = {"input": {"type": "checkbox", "disabled": "disabled"}}
_TASK = re.compile(r"\[([ xX])\] ")


def _align_classes(state: Any) -> None:
    """markdown-it writes a column's alignment as style="text-align:..."; make it a class."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open"):
            style = token.attrGet("style")
            if isinstance(style, str) and style.startswith("text-align:"):
                del token.attrs["style"]
                token.attrSet("class", "align-" + style.removeprefix("text-align:"))


def _task_lists(state: Any) -> None:
    """GitHub task lists: a list item whose text starts with "[ ] " or "[x] " gets a disabled
    checkbox (an html_inline token: markdown-it renders it whatever its "html" option) instead."""
    tokens = state.tokens
    for i in range(2, len(tokens)):
        inline = tokens[i]
        if inline.type != "inline" or tokens[i - 1].type != "paragraph_open" or tokens[i - 2].type != "list_item_open":
            continue
        first = inline.children[0] if inline.children else None
        match = _TASK.match(first.content) if first is not None and first.type == "text" else None
        if first is None or match is None:
            continue
        first.content = first.content[match.end() :]
        box = Token("html_inline", "", 0)
        box.content = (
            '<input type="checkbox" disabled checked> ' if match[1] != " " else '<input type="checkbox" disabled> '
        )
        inline.children.insert(0, box)
        tokens[i - 2].attrSet("class", "task")


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    if not lang or len(code) > MAX_HIGHLIGHT:
        return ""
    try:
        lexer = get_lexer_by_name(lang.split()[0])
    except ClassNotFound:
        return ""
    # One <pre> of our own: markdown-it keeps a highlight that starts with "<pre" as it is, and wraps
    # anything else (pygments' <div class="hl"><pre>) in a <pre><code> of its own, a box in a box.
    return f'<pre class="hl"><code>{pyg_highlight(code, lexer, _FORMATTER)}</code></pre>'


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.core.ruler.push("align_classes", _align_classes)
    md.core.ruler.push("task_lists", _task_lists)
    md.options["highlight"] = _highlight
    return md


def sanitize(html: str) -> str:
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRS,
        allowed_classes=_CLASSES,
        tag_attribute_values=_INPUT_VALUES,
        set_tag_attribute_values=_INPUT_SET,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def markdown(text: str) -> SafeString:
    """Markdown to sanitised HTML."""
    return mark_safe(sanitize(_md().render(text)))


def code(text: str, lang: str = "") -> SafeString:
    highlighted = _highlight(text, lang, None) if lang else ""
    if highlighted:
        return mark_safe(sanitize(highlighted))
    return mark_safe(f'<pre class="plain"><code>{escape(text)}</code></pre>')


def mark_words(text: str, words: Sequence[str]) -> SafeString:
    """text, escaped, with every occurrence of each (lower-case) word in a <mark> (search hits)."""
    low = text.lower()
    spans = sorted((at, at + len(w)) for w in words if w for at in _occurrences(low, w) if len(low) == len(text))
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if end <= pos:
            continue
        start = max(start, pos)
        out.append(escape(text[pos:start]))
        out.append(f"<mark>{escape(text[start:end])}</mark>")
        pos = end
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))


def _occurrences(text: str, word: str) -> Iterator[int]:
    at = text.find(word)
    while at >= 0:
        yield at
        at = text.find(word, at + len(word))


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pygments_css() -> str:
    light = HtmlFormatter(style="default").get_style_defs(".hl")
    dark = HtmlFormatter(style="monokai").get_style_defs('[data-theme="dark"] .hl')
    return f"{light}\n{dark}\n"


# --- entries to display blocks -------------------------------------------------------------------


@dataclass(slots=True)
class Block:
    kind: str  # text, thinking, tool_call, image, output
    html: SafeString | None = None
    text: str = ""
    name: str = ""
    call_id: str = ""
    truncated: bool = False
    result: Block | None = None
    is_error: bool = False
    index: int = 0  # image index within the message; a tool call's block index
    path: str = ""  # a built-in tool call's file (render/tools.py)


@dataclass(slots=True)
class Shown:
    """One path entry ready for the conversation template."""

    id: str
    kind: str  # user, assistant, tool, bash, custom, compaction, branch_summary, marker, rename, hidden
    title: str = ""
    blocks: list[Block] = field(default_factory=list)
    meta: str = ""
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def _truncate(text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    if len(lines) > TRUNCATE_LINES:
        text = "\n".join(lines[:TRUNCATE_LINES])
        return text[:TRUNCATE_CHARS], True
    if len(text) > TRUNCATE_CHARS:
        return text[:TRUNCATE_CHARS], True
    return text, False


def output_block(content: Any, *, full: bool = False, is_error: bool = False) -> Block:
    """A tool result's text (truncated unless full) and how many images it has."""
    text = content_text(content, "\n")
    shown, cut = (text, False) if full else _truncate(text)
    return Block(kind="output", text=shown, truncated=cut, is_error=is_error)


def _images(content: Any) -> list[Block]:
    if not isinstance(content, list):
        return []
    return [
        Block(kind="image", index=i)
        for i, b in enumerate(content)
        if isinstance(b, dict) and b.get("type") == "image" and isinstance(b.get("data"), str)
    ]


def _content_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block(kind="text", html=markdown(content))]
    blocks: list[Block] = []
    if not isinstance(content, list):
        return blocks
    for i, b in enumerate(content):
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            if b["text"].strip():
                blocks.append(Block(kind="text", html=markdown(b["text"])))
        elif kind == "thinking" and isinstance(b.get("thinking"), str):
            if b["thinking"].strip():
                blocks.append(Block(kind="thinking", html=markdown(b["thinking"])))
        elif kind == "toolCall":
            blocks.append(tool_call_block(b, i))
        elif kind == "image" and isinstance(b.get("data"), str):
            blocks.append(Block(kind="image", index=i))
    return blocks


def tool_call_block(b: dict[str, Any], index: int, *, full: bool = False) -> Block:
    """A tool call: pi's built-in tools drawn for a reviewer (render/tools.py), others as their
    arguments' JSON."""
    args = b.get("arguments")
    name = str(b.get("name", "tool"))
    call_id = str(b.get("id", ""))
    view = tools.call_view(name, args, full=full)
    if view is not None:
        return Block("tool_call", view.html, view.summary, name, call_id, view.truncated, index=index, path=view.path)
    return Block("tool_call", code(pretty_json(args), "json"), _call_summary(args), name, call_id, index=index)


def _call_summary(args: Any) -> str:
    if not isinstance(args, dict):
        return ""
    for key in ("command", "path", "file_path", "pattern", "query", "url"):
        if isinstance(args.get(key), str):
            return " ".join(args[key].split())
    return ""


def _model_of(message: dict[str, Any]) -> str:
    provider, model = message.get("provider"), message.get("model")
    return f"{provider}/{model}" if provider and model else str(model or "")


def shown_entry(raw: str, entry_id: str, *, full: bool = False) -> Shown:
    """Turn one stored JSON line into what the conversation draws (full: outputs uncut)."""
    return shown_data(jsjson.loads(raw), entry_id, full=full)


def shown_data(data: dict[str, Any], entry_id: str, *, full: bool = False) -> Shown:
    """shown_entry of a line already parsed."""
    kind = data.get("type")
    if kind == "message":
        message: dict[str, Any] = data["message"] if isinstance(data.get("message"), dict) else {}
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            # The Edit box's text: what pi puts in the editor for this message.
            return Shown(entry_id, "user", "You", _content_blocks(content), data={"text": editor_text(data)})
        if role == "assistant":
            blocks = _content_blocks(content)
            stop = message.get("stopReason")
            note = ""
            if stop == "aborted":
                note = "Aborted"
            elif stop == "error":
                note = f"Error: {message.get('errorMessage') or 'unknown error'}"
            return Shown(entry_id, "assistant", "Assistant", blocks, meta=_model_of(message), note=note)
        if role == "toolResult":
            out = output_block(content, full=full, is_error=bool(message.get("isError")))
            return Shown(
                entry_id, "tool", str(message.get("toolName", "tool")), [out, *_images(content)],
                data={"call_id": message.get("toolCallId")},
            )  # fmt: skip
        if role == "bashExecution":
            out = output_block(message.get("output"), full=full)
            exit_code = message.get("exitCode")
            note = "(cancelled)" if message.get("cancelled") else (f"(exit {exit_code})" if exit_code else "")
            return Shown(entry_id, "bash", f"$ {message.get('command', '')}", [out], note=note)
        if role in ("branchSummary", "compactionSummary"):
            return Shown(
                entry_id,
                "branch_summary",
                str(role),
                [Block(kind="text", html=markdown(str(message.get("summary", ""))))],
            )
        return Shown(entry_id, "custom", str(role), _content_blocks(content))
    if kind == "compaction":
        tokens = data.get("tokensBefore")
        title = f"Compacted from {tokens:,} tokens" if isinstance(tokens, int) else "Compaction"
        return Shown(entry_id, "compaction", title, [Block(kind="text", html=markdown(str(data.get("summary", ""))))])
    if kind == "branch_summary":
        return Shown(
            entry_id,
            "branch_summary",
            "Branch summary",
            [Block(kind="text", html=markdown(str(data.get("summary", ""))))],
        )
    if kind == "custom_message":
        if not data.get("display", True):
            return Shown(entry_id, "hidden")
        return Shown(entry_id, "custom", str(data.get("customType", "custom")), _content_blocks(data.get("content")))
    if kind == "model_change":
        return Shown(entry_id, "marker", f"Model: {data.get('provider')}/{data.get('modelId')}")
    if kind == "thinking_level_change":
        return Shown(entry_id, "marker", f"Thinking: {data.get('thinkingLevel')}")
    if kind == "session_info":
        # Bookkeeping: a small note, not a card. pi trims the name; an empty one clears it.
        name = js_trim(data["name"]) if isinstance(data.get("name"), str) else ""
        return Shown(entry_id, "rename", f"Renamed to “{name}”" if name else "Name cleared")
    if kind == "label":
        return Shown(entry_id, "hidden")  # bookkeeping: shown as a chip on its target instead
    return Shown(entry_id, "marker", f"[{kind}]")


class StoredEntry(Protocol):
    entry_id: str
    raw: str


def shown_path(entries: Iterable[StoredEntry]) -> list[Shown]:
    """Path entries as the conversation draws them: hidden ones left out, each tool result under
    its call, user messages with their Edit text."""
    shown = (shown_entry(e.raw, e.entry_id) for e in entries)
    return attach_results([s for s in shown if s.kind != "hidden"])


def attach_results(shown: list[Shown]) -> list[Shown]:
    """Put each tool result under the call that asked for it (when both are drawn), as pi's export."""
    calls: dict[str, Block] = {}
    for s in shown:
        for b in s.blocks:
            if b.kind == "tool_call" and b.call_id:
                calls[b.call_id] = b
    out: list[Shown] = []
    for s in shown:
        call = calls.get(str(s.data.get("call_id"))) if s.kind == "tool" else None
        if call is not None and call.result is None:
            call.result = s.blocks[0]
            call.result.name = s.id  # the result entry, for "show all"
            if call.name == "read" and call.path and not call.result.is_error:
                call.result.html = tools.excerpt_html(call.result.text, call.path)
            continue
        out.append(s)
    return out


IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_B64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def image_block(raw: str, index: int) -> tuple[str, str] | None:
    """(mime type, base64 data) of an image block, if it is a safe raster image."""
    data = jsjson.loads(raw)
    message = data.get("message") if isinstance(data.get("message"), dict) else data
    content = message.get("content")
    if not isinstance(content, list) or not 0 <= index < len(content):
        return None
    block = content[index]
    if not isinstance(block, dict) or block.get("type") != "image":
        return None
    mime, b64 = block.get("mimeType"), block.get("data")
    if mime not in IMAGE_TYPES or not isinstance(b64, str) or not _B64.match(b64):
        return None
    return str(mime), b64
