"""The entry tree, pure: nodes, paths, children, labels, names. No Django imports.

Mirrors pi's SessionManager reads (coding-agent v3): a node is one JSONL entry line; the tree is
given by ``id``/``parentId``; labels and the session name are entries too (last one wins).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


class TreeError(ValueError):
    """An operation that would break the tree (unknown entry, cycle, ...)."""


def parse_timestamp_ms(value: object) -> int | None:
    """Date.parse() for the ISO strings pi writes (UTC offset required); None if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value)  # Python 3.11 reads the trailing "Z" too
    except ValueError:
        return None
    if dt.tzinfo is None:
        return None
    return (dt - _EPOCH) // _MS


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    parent_id: str | None
    type: str
    data: Mapping[str, Any] = field(repr=False)  # the whole entry object, keys in file order

    @property
    def role(self) -> str | None:
        if self.type != "message":
            return None
        message = self.data.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        return role if isinstance(role, str) else None


def node_from_entry(entry: Mapping[str, Any]) -> Node:
    parent = entry.get("parentId")
    return Node(
        id=str(entry["id"]),
        parent_id=parent if isinstance(parent, str) else None,
        type=str(entry.get("type")),
        data=entry,
    )


@dataclass(slots=True)
class TreeIndex:
    by_id: dict[str, Node]
    order: list[str]  # file order

    def get(self, node_id: str) -> Node:
        try:
            return self.by_id[node_id]
        except KeyError:
            raise TreeError(f"Entry {node_id} not found") from None


def index(nodes: Iterable[Node]) -> TreeIndex:
    idx = TreeIndex(by_id={}, order=[])
    for node in nodes:
        idx.by_id[node.id] = node
        idx.order.append(node.id)
    return idx


def path_to_root(idx: TreeIndex, leaf_id: str | None) -> list[Node]:
    """Root-first path ending at leaf_id (pi's getBranch). A missing parent ends the walk."""
    if leaf_id is None or leaf_id not in idx.by_id:
        return []
    path: list[Node] = []
    seen: set[str] = set()
    node: Node | None = idx.by_id[leaf_id]
    while node is not None and node.id not in seen:
        seen.add(node.id)
        path.append(node)
        node = idx.by_id.get(node.parent_id) if node.parent_id is not None else None
    path.reverse()
    return path


def _timestamp_key(node: Node) -> float:
    ms = parse_timestamp_ms(node.data.get("timestamp"))
    return float("nan") if ms is None else ms


def children(idx: TreeIndex, node_id: str | None) -> list[Node]:
    """Children sorted by timestamp (stable: equal times keep file order), as getTree() does;
    the roots (node_id None) stay in file order, as getTree() leaves them."""
    kids = [idx.by_id[i] for i in idx.order if idx.by_id[i].parent_id == node_id]
    return kids if node_id is None else sort_by_time(kids)


def sort_by_time(nodes: list[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: parse_timestamp_ms(n.data.get("timestamp")) or 0)


def labels_in_force(entries: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """pi's label replay (SessionManager's labelsById and labelTimestampsById): the label entries
    among entries, in file order; one with a non-empty label sets its target's label, one with an
    empty or absent label clears it. Each labelled entry id maps to the label entry in force, which
    holds the label and when it was set ("timestamp").

    The dict keeps JavaScript Map order (a re-set target keeps its place, a cleared one leaves).
    """
    in_force: dict[str, Mapping[str, Any]] = {}
    for data in entries:
        target = data.get("targetId")
        if data.get("type") != "label" or not isinstance(target, str):
            continue
        value = data.get("label")
        if isinstance(value, str) and value:
            in_force[target] = data
        else:
            in_force.pop(target, None)
    return in_force


def labels(nodes: Iterable[Node]) -> dict[str, str]:
    """Resolved labels: entry id -> label, by labels_in_force."""
    return {target: data["label"] for target, data in labels_in_force(n.data for n in nodes).items()}


# What String.prototype.trim() strips: JavaScript's WhiteSpace and LineTerminator (not str.isspace).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def session_name(nodes: Iterable[Node]) -> str | None:
    """The latest session_info's name, trimmed, as pi's getSessionName() and session list: an empty
    or missing name clears it (None)."""
    name: str | None = None
    for node in nodes:
        if node.type == "session_info":
            value = node.data.get("name")
            name = (js_trim(value) or None) if isinstance(value, str) else None
    return name


def content_text(content: object, joiner: str, *, limit: int | None = None) -> str:
    """The text of a message's content, as pi reads it everywhere: string content as it is, else
    its text blocks' texts joined with joiner (``content.filter(c => c.type === "text").map(c =>
    c.text).join(joiner)``); anything else is "". With limit, only the first limit characters (the
    rest of a long text is never copied).

    pi's joiners: "" for the editor (navigateTree, fork), the /tree rows and serializeConversation;
    " " for the session list's first message (extractTextContent); "\n" for a tool result's output
    in its HTML export.
    """
    if isinstance(content, str):
        return content if limit is None else content[:limit]
    if not isinstance(content, list):
        return ""
    if len(content) == 1:  # (most messages: one text block)
        block = content[0]
        if type(block) is dict and block.get("type") == "text":
            text = block.get("text")
            if type(text) is str:
                return text if limit is None else text[:limit]
    parts: list[str] = []
    room = limit
    for block in content:
        if type(block) is not dict or block.get("type") != "text":
            continue
        text = block.get("text")
        if type(text) is not str:
            continue
        if room is not None:
            room -= len(joiner) if parts else 0
            text = text[: max(room, 0)]
            room -= len(text)
        parts.append(text)
        if room is not None and room <= 0:
            break
    joined = joiner.join(parts)
    return joined if limit is None else joined[:limit]


def editor_text(data: Mapping[str, Any]) -> str:
    """The text pi puts in the editor for an entry (a user or custom message): continuing or forking
    from it, and piweb's Edit box. Its text blocks joined with nothing, as pi's navigateTree does."""
    if data.get("type") == "custom_message":
        return content_text(data.get("content"), "")
    message = data.get("message")
    return content_text(message.get("content"), "") if isinstance(message, dict) else ""


def common_ancestor(idx: TreeIndex, a: str | None, b: str | None) -> str | None:
    """The deepest entry on both a's and b's paths to the root (either one itself when it is on the
    other's path); None when they share no root or either is missing. As pi's branch summary finds it."""
    on_a = {n.id for n in path_to_root(idx, a)}
    return next((n.id for n in reversed(path_to_root(idx, b)) if n.id in on_a), None)


def check_acyclic(parents: Mapping[str, str | None]) -> list[str]:
    """Ids that lie on a parent cycle (including self-parents). Iterative, O(n)."""
    state: dict[str, int] = {}  # 1 = on current walk, 2 = done (reaches a root)
    bad: list[str] = []
    for start in parents:
        if start in state:
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in state:
            state[node] = 1
            walk.append(node)
            node = parents[node]
        if node is not None and state.get(node) == 1:
            cycle_start = walk.index(node)
            bad.extend(walk[cycle_start:])
        for n in walk:
            state[n] = 2
    return bad


def leaf_after_load(nodes: Sequence[Node]) -> str | None:
    """pi's leaf on load: the last entry line in file order."""
    return nodes[-1].id if nodes else None


def _one_line(text: str, limit: int = 200) -> str:
    """The first limit * 2 characters, each run of spaces (tabs, newlines...) made one space and
    none at either end; cut to limit characters with an ellipsis."""
    # Flattening a prefix gives a prefix of the whole result: when that is already too long, the
    # rest of the text cannot matter (most texts, read a little past limit, not twice as far).
    for size in (limit + limit // 8, limit * 2):
        flat = text[:size]
        # split() eats tabs, newlines and Unicode spaces: all non-printable but " ". A text with
        # none of them and no run of spaces or space at either end is flat already.
        if not (flat.isprintable() and "  " not in flat and flat[:1] != " " and flat[-1:] != " "):
            flat = " ".join(flat.split())
        if len(flat) > limit or len(text) <= size:
            break
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_call_text(name: object, arguments: object) -> str:
    args = arguments if isinstance(arguments, dict) else {}
    path = args.get("path") or args.get("file_path")
    if name == "bash" and isinstance(args.get("command"), str):
        return f"[bash: {_one_line(args['command'], 50)}]"
    if isinstance(path, str):
        return f"[{name}: {path}]"
    return f"[{name}]"


# The row text of an assistant message pi's /tree hides (no text, stopped normally); a reply with
# text always reads "assistant: " + its text, so the prefix tells the two apart exactly.
TEXTLESS_PREFIX = "assistant · "


def row_text(data: Mapping[str, Any]) -> str:
    """One line describing an entry, after pi's /tree rows (newlines flattened, 200 chars)."""
    kind = data.get("type")
    if kind == "message":
        raw_message = data.get("message")
        message: Mapping[str, Any] = raw_message if isinstance(raw_message, dict) else {}
        role = message.get("role")
        text = content_text(message.get("content"), "", limit=400)
        if role == "assistant":
            if not text.strip():
                stop = message.get("stopReason")
                if stop == "aborted":
                    return "assistant: (aborted)"
                if stop == "error":
                    return _one_line(f"assistant: {message.get('errorMessage') or 'error'}", 80)
                # No text: pi's /tree hides it unless it stopped otherwise than "stop"/"toolUse"
                # (the length limit, say). Hidden ones get TEXTLESS_PREFIX.
                prefix = TEXTLESS_PREFIX if stop in (None, "", "stop", "toolUse") else "assistant: "
                calls = [b for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == "toolCall"]
                if calls:
                    texts = [_tool_call_text(c.get("name"), c.get("arguments")) for c in calls]
                    return _one_line(prefix + " ".join(texts))
                return prefix + "(no content)"
            return _one_line(f"assistant: {text}")
        if role == "toolResult":
            return _one_line(f"[{message.get('toolName')}]: {text}")
        if role == "bashExecution":
            return _one_line(f"[bash]: {message.get('command')}")
        return _one_line(f"{role}: {text}")
    if kind == "custom_message":
        return _one_line(f"[{data.get('customType')}]: {content_text(data.get('content'), '', limit=400)}")
    if kind == "compaction":
        tokens = data.get("tokensBefore")
        k = round(tokens / 1000) if isinstance(tokens, int | float) else "?"
        return f"[compaction: {k}k tokens]"
    if kind == "branch_summary":
        return _one_line(f"[branch summary]: {data.get('summary')}")
    if kind == "model_change":
        return _one_line(f"[model: {data.get('modelId')}]")
    if kind == "thinking_level_change":
        return _one_line(f"[thinking: {data.get('thinkingLevel')}]")
    if kind == "custom":
        return _one_line(f"[custom: {data.get('customType')}]")
    if kind == "label":
        return _one_line(f"[label: {data.get('label') or '(cleared)'}]")
    if kind == "session_info":
        return _one_line(f"[name: {data.get('name') or ''}]")
    return _one_line(f"[{kind}]")
