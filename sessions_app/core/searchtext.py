"""What search indexes of an entry, and how a query reads. Pure: no Django, no SQL.

An entry gives zero or more documents: its searchable text (message text, tool calls with their
arguments, tool results, custom messages, summaries, session names), its thinking apart (flagged,
searched only on request), or, for a label entry, the label text landing on the label's target.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sessions_app.core.listing import storable
from sessions_app.core.tree import content_text

MAX_TEXT = 20_000  # characters of one document: a huge tool output is searched by its start


@dataclass(slots=True)
class Doc:
    entry_id: str  # where a hit lands: the entry itself, or a label's target
    kind: str  # "text", "thinking", "label", "name"
    role: str
    tool: str  # the tool names it calls (or, for a tool result, the tool that ran), space-separated
    model: str
    text: str


def _args_text(arguments: object) -> str:
    if isinstance(arguments, dict):
        return " ".join(str(v) for v in arguments.values() if isinstance(v, str | int | float))
    return arguments if isinstance(arguments, str) else ""


def entry_docs(data: Mapping[str, Any]) -> list[Doc]:
    """The documents of one stored entry (a validated pi line)."""
    kind = data.get("type")
    entry_id = str(data.get("id"))
    docs: list[Doc] = []
    if kind == "message":
        message = data.get("message")
        if not isinstance(message, dict):
            return docs
        role = str(message.get("role") or "")
        content = message.get("content")
        model = message.get("model") if role == "assistant" else None
        model_text = model if isinstance(model, str) else ""
        parts = [content_text(content, "\n")]
        tools: list[str] = []
        thinking: list[str] = []
        if role == "toolResult":
            tools.append(str(message.get("toolName") or ""))
        elif role == "bashExecution":
            tools.append("bash")
            parts += [str(message.get("command") or ""), str(message.get("output") or "")]
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "toolCall":
                name = str(block.get("name") or "")
                tools.append(name)
                parts.append(f"{name} {_args_text(block.get('arguments'))}")
            elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                thinking.append(block["thinking"])
        tool_text = " ".join(t for t in tools if t)
        text = "\n".join(p for p in parts if p)
        if text.strip():
            docs.append(Doc(entry_id, "text", role, tool_text, model_text, text[:MAX_TEXT]))
        if thinking:
            docs.append(Doc(entry_id, "thinking", role, tool_text, model_text, "\n".join(thinking)[:MAX_TEXT]))
    elif kind == "custom_message":
        text = content_text(data.get("content"), "\n")
        if text.strip():
            docs.append(Doc(entry_id, "text", "custom", "", "", f"{data.get('customType') or ''}\n{text}"[:MAX_TEXT]))
    elif kind in ("compaction", "branch_summary"):
        summary = data.get("summary")
        if isinstance(summary, str) and summary.strip():
            docs.append(Doc(entry_id, "text", kind, "", "", summary[:MAX_TEXT]))
    elif kind == "session_info":
        session_name = data.get("name")
        if isinstance(session_name, str) and session_name.strip():
            docs.append(Doc(entry_id, "name", "name", "", "", session_name[:MAX_TEXT]))
    elif kind == "label":
        label = data.get("label")
        target = data.get("targetId")
        if isinstance(label, str) and label.strip() and isinstance(target, str):
            docs.append(Doc(target, "label", "label", "", "", label[:MAX_TEXT]))
    return docs


IndexRow = tuple[int, str, str, str, str, str, int, str]  # seq, entry_id, kind, role, tool, model, ts_ms, text


def index_rows(entries: Iterable[tuple[int, int, Mapping[str, Any]]]) -> tuple[list[IndexRow], list[str]]:
    """The index rows of entries given as (seq, ts_ms, data) in seq order, and the label targets
    they set or clear. Only the last label of a target among them is kept (pi's replay: last one
    wins); the writer removes the label rows of those targets it stored before."""
    rows: list[IndexRow] = []
    labelled: dict[str, int] = {}  # label target -> its row in `rows`, or -1 once cleared
    for seq, ts_ms, data in entries:
        docs = entry_docs(data)
        for doc in docs:
            if doc.kind == "label":
                labelled[doc.entry_id] = len(rows)
            rows.append(
                (seq, doc.entry_id, doc.kind, storable(doc.role), storable(doc.tool), storable(doc.model), ts_ms,
                 storable(doc.text))
            )  # fmt: skip
        if not docs and data.get("type") == "label" and isinstance(data.get("targetId"), str):
            labelled[data["targetId"]] = -1  # a label cleared
    if labelled:
        keep = set(labelled.values())
        rows = [r for i, r in enumerate(rows) if r[2] != "label" or i in keep]
    return rows, list(labelled)


# ---- queries ----

WORD = re.compile(r"[^\W_]+")  # letters and digits: the tokens of both full-text engines
FILTERS = ("role", "tool", "model", "label", "team", "after", "before", "session", "thinking")
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')


class QueryError(ValueError):
    """A filter the query cannot use (a bad date, say): the message says which."""


@dataclass(slots=True)
class Query:
    words: list[str] = field(default_factory=list)  # each must appear
    prefixes: list[str] = field(default_factory=list)  # each must start a word
    phrases: list[list[str]] = field(default_factory=list)  # each a run of words, in order
    filters: dict[str, str] = field(default_factory=dict)
    after_ms: int | None = None
    before_ms: int | None = None

    @property
    def has_text(self) -> bool:
        return bool(self.words or self.prefixes or self.phrases)

    @property
    def empty(self) -> bool:
        return not self.has_text and not self.filters

    def fts5(self) -> str:
        """An FTS5 MATCH expression: every term a quoted string of word characters only (parse),
        so no user text is ever read as FTS5 syntax; terms side by side mean AND."""
        terms = [f'"{w}"' for w in self.words]
        terms += [f'"{p}"*' for p in self.prefixes]
        terms += ['"' + " ".join(ph) + '"' for ph in self.phrases]
        return " ".join(terms)

    def highlight_terms(self) -> list[str]:
        return [*self.words, *self.prefixes, *(" ".join(p) for p in self.phrases)]


def _date_ms(value: str, what: str, *, end: bool) -> int:
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise QueryError(f"{what}: expects a date as YYYY-MM-DD, got {value!r}") from None
    ms = int(day.timestamp() * 1000)
    return ms + 86_400_000 if end else ms


def parse(q: str) -> Query:
    """Words (all must match), "quoted phrases", prefixes (migrat*) and name:value filters. Only
    word characters reach the engine: punctuation splits words (rm -rf is rm and rf), and a
    term with none (a lone quote, a star) is dropped."""
    query = Query()
    for match in _TOKEN.finditer(q[:1000]):
        phrase, bare = match.group(1), match.group(2)
        if phrase is not None:
            words = [w.lower() for w in WORD.findall(phrase)]
            if len(words) == 1:
                query.words.append(words[0])
            elif words:
                query.phrases.append(words)
            continue
        name, sep, value = bare.partition(":")
        if sep and name.lower() in FILTERS and value:
            key = name.lower()
            if key == "after":
                query.after_ms = _date_ms(value, "after", end=False)
            elif key == "before":
                query.before_ms = _date_ms(value, "before", end=False)
            query.filters[key] = value
            continue
        words = [w.lower() for w in WORD.findall(bare)]
        if not words:
            continue
        if bare.endswith("*"):
            query.words += words[:-1]
            query.prefixes.append(words[-1])
        elif len(words) > 1 and not bare.startswith("-"):
            query.phrases.append(words)  # a path or an identifier with dots: its parts in order
        else:
            query.words += words
    # A term given twice asks nothing more, but the engine would read its matches twice.
    query.words = list(dict.fromkeys(query.words))
    query.prefixes = list(dict.fromkeys(query.prefixes))
    query.phrases = [list(p) for p in dict.fromkeys(tuple(p) for p in query.phrases)]
    return query


def snippet(text: str, terms: list[str], *, width: int = 160) -> str:
    """Escaped HTML around the first match, the matches in <mark>: the only markup in it."""
    if not terms:
        return html.escape(_flat(text[:width]))
    pattern = re.compile(
        "|".join(
            r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, t.split())) for t in sorted(terms, key=len, reverse=True)
        ),
        re.IGNORECASE,
    )
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - width // 3)
    window = text[start : start + width]
    out: list[str] = ["…" if start else ""]
    at = 0
    for m in pattern.finditer(window):
        out.append(html.escape(_flat(window[at : m.start()])))
        out.append("<mark>" + html.escape(_flat(m.group(0))) + "</mark>")
        at = m.end()
    out.append(html.escape(_flat(window[at:])))
    if start + width < len(text):
        out.append("…")
    return "".join(out)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)
