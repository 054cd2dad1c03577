"""LLM context from a path of entries, exactly as pi's buildSessionContext. Pure: no Django.

One rule, :func:`context_nodes` (which entries' messages, in which order), behind every entry point:
- :func:`build_session_context` takes a whole session (file order) and a leaf, like pi;
- :func:`context_from_path` takes only the tail of the path that can emit messages (from the last
  compaction's first kept entry to the leaf) plus the model and thinking level already resolved for
  the leaf. The database keeps those two per entry, so a context costs what the context holds, not
  what the session holds;
- the context inspector reads context_nodes itself (which entry each message comes from).
A message entry's node may carry its message still as the stored JSON (:func:`stored_message`):
pi uses such a message unchanged, so the context API writes those bytes out without decoding them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from sessions_app.core import jsjson
from sessions_app.core.tree import Node, parse_timestamp_ms


@dataclass(frozen=True, slots=True)
class PathState:
    """What a path has set by the time it reaches an entry."""

    thinking_level: Any = "off"
    model: Mapping[str, Any] | None = None
    compaction_id: str | None = None  # last compaction on the path, the entry itself included


StateJson = tuple[PathState, str, str | None]  # the state (kept alive), thinking level and model as JSON


def state_json(cache: dict[int, StateJson], state: PathState) -> StateJson:
    """A path state's stored columns, serialised once per state: states are shared along a path."""
    cached = cache.get(id(state))
    if cached is None:
        model = state.model
        cached = (state, jsjson.dumps(state.thinking_level), jsjson.dumps(model) if model is not None else None)
        cache[id(state)] = cached
    return cached


def advance(state: PathState, node: Node) -> PathState:
    """State after node, given the state at its parent (the scan of step 4 in pi)."""
    return advance_entry(state, node.type, node.id, node.data)


def advance_entry(state: PathState, kind: str, entry_id: str, data: Mapping[str, Any]) -> PathState:
    """advance() for an entry not wrapped in a Node (the import worker's loop)."""
    if kind == "message":
        message = data.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _with_model(state, _model(message, "provider", "model"))
        return state
    if kind == "thinking_level_change":
        return PathState(data.get("thinkingLevel"), state.model, state.compaction_id)
    if kind == "model_change":
        return _with_model(state, _model(data, "provider", "modelId"))
    if kind == "compaction":
        return PathState(state.thinking_level, state.model, entry_id)
    return state


def _with_model(state: PathState, model: dict[str, Any]) -> PathState:
    # Most assistant messages repeat the model in force: keep sharing the same state object.
    return state if model == state.model else PathState(state.thinking_level, model, state.compaction_id)


def _model(source: Mapping[str, Any], provider_key: str, model_key: str) -> dict[str, Any]:
    # JSON.stringify drops undefined members, so absent fields stay absent.
    model: dict[str, Any] = {}
    if provider_key in source:
        model["provider"] = source[provider_key]
    if model_key in source:
        model["modelId"] = source[model_key]
    return model


def _timestamp(entry: Mapping[str, Any]) -> int | None:
    return parse_timestamp_ms(entry.get("timestamp"))  # None stands for JS NaN, written as null


# The summary entries' messages: their role, and the field each carries beside the summary.
_SUMMARY_MESSAGES = {"branch_summary": ("branchSummary", "fromId"), "compaction": ("compactionSummary", "tokensBefore")}


def entry_message(node: Node) -> dict[str, Any] | None:
    """The message an entry stands for (pi's getMessageFromEntry): a message entry's own message;
    custom_message, branch_summary and compaction as pi's createCustomMessage,
    createBranchSummaryMessage and createCompactionSummaryMessage make them; None for the rest."""
    data = node.data
    if node.type == "message":
        message = data.get("message")
        return message if isinstance(message, dict) else None
    if node.type == "custom_message":
        custom: dict[str, Any] = {
            "role": "custom",
            "customType": data.get("customType"),
            "content": data.get("content"),
            "display": data.get("display"),
        }
        if "details" in data:  # JSON.stringify drops an undefined member
            custom["details"] = data["details"]
        custom["timestamp"] = _timestamp(data)
        return custom
    summary = _SUMMARY_MESSAGES.get(node.type)
    if summary is not None:
        role, field = summary
        return {"role": role, "summary": data.get("summary"), field: data.get(field), "timestamp": _timestamp(data)}
    return None


# A context message: a dict, or a message entry's message still as its stored JSON.
Message = dict[str, Any] | orjson.Fragment


def stored_message(message_json: bytes | None) -> Mapping[str, Any]:
    """The data of a message entry's node that carries only its message, as the stored JSON object
    (None: the entry's message is not an object). pi puts such a message in the context unchanged,
    so orjson.dumps writes these bytes out as they are, never decoded and encoded again; every other
    entry's node carries its whole parsed line."""
    return {} if message_json is None else {"message": orjson.Fragment(message_json)}


def message_span(line: bytes, data: Mapping[str, Any]) -> tuple[int, int] | None:
    """Where a message entry's line holds its message's JSON: (byte offset, length) of a text that
    serialises exactly the message the line parses to, so serving those bytes serves that message
    whatever else the line holds (duplicate keys, odd spacing). None if no such text is found
    (numbers or escapes written otherwise than both serialisers write them)."""
    message = data.get("message")
    if data.get("type") != "message" or not isinstance(message, dict):
        return None
    for dump in _dumps_of(message):
        at = line.rfind(dump)  # (from the end: pi writes the message last)
        if at >= 0:
            return at, len(dump)
    return None


def serialises(text: bytes, message: object) -> bool:
    """Whether text is the message exactly as message_span records one (a stored span's check)."""
    return isinstance(message, dict) and any(text == dump for dump in _dumps_of(message))


def _dumps_of(message: dict[str, Any]) -> Iterator[bytes]:
    """The message as orjson writes it, then (if it differs) as JSON.stringify would."""
    try:
        first = orjson.dumps(message)
    except TypeError:  # an integer beyond 64 bits, a lone surrogate
        first = None
    if first is not None:
        yield first
    try:
        second = jsjson.dumps(message).encode()
    except (TypeError, ValueError, RecursionError):
        return
    if second != first:
        yield second


def _context_message(node: Node) -> Message | None:
    """buildSessionContext's appendMessage: no compaction (its summary leads the context, once) and
    no branch summary without a summary."""
    if node.type == "compaction" or (node.type == "branch_summary" and not node.data.get("summary")):
        return None
    if node.type == "message" and isinstance(stored := node.data.get("message"), orjson.Fragment):
        return stored
    return entry_message(node)


def context_nodes(path: Sequence[Node]) -> list[tuple[Node, Message]]:
    """pi's rule: the entries whose messages make the context at the end of path, in the order the
    model receives them (the last compaction's summary first, then the entries it kept, then the
    rest), each with its message. path must reach back at least to the first kept entry of the last
    compaction on it (or to the root when there is no compaction)."""
    compaction_index = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            compaction_index = i
            break
    out: list[tuple[Node, Message]] = []

    def emit(node: Node) -> None:
        message = _context_message(node)
        if message is not None:
            out.append((node, message))

    if compaction_index < 0:
        for node in path:
            emit(node)
    else:
        compaction = path[compaction_index]
        summary = entry_message(compaction)
        assert summary is not None  # a compaction always stands for its summary message
        out.append((compaction, summary))
        first_kept = compaction.data.get("firstKeptEntryId")
        found = False
        for node in path[:compaction_index]:
            if node.id == first_kept:
                found = True
            if found:
                emit(node)
        for node in path[compaction_index + 1 :]:
            emit(node)
    return out


def context_from_path(
    path: Sequence[Node], *, thinking_level: Any = "off", model: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Context for the leaf at the end of path (context_nodes' messages, with the thinking level and
    model resolved for the leaf)."""
    messages = [message for _, message in context_nodes(path)]
    return {"messages": messages, "thinkingLevel": thinking_level, "model": model}


def build_session_context(nodes: Sequence[Node], leaf_id: str | None = None) -> dict[str, Any]:
    """pi's buildSessionContext(entries, leafId) over a whole session in file order.

    leaf_id None means "the last entry", as when pi is called without a leaf.
    """
    by_id = {n.id: n for n in nodes}
    leaf = by_id.get(leaf_id) if leaf_id is not None else None
    if leaf is None:
        leaf = nodes[-1] if nodes else None
    if leaf is None:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    path: list[Node] = []
    seen: set[str] = set()
    current: Node | None = leaf
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    state = PathState()
    for node in path:
        state = advance(state, node)
    return context_from_path(path, thinking_level=state.thinking_level, model=state.model)
