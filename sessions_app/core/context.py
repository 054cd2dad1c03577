"""LLM context from a path of entries, exactly as pi's buildSessionContext. Pure: no Django.

One rule, :func:`context_plan` (which entries' messages, in which order), behind every entry point:
- :func:`build_session_context` takes a whole session (file order) and a leaf, like pi;
- :func:`context_from_path` takes only the tail of the path that can emit messages (from the last
  compaction's first kept entry to the leaf) plus the model and thinking level already resolved for
  the leaf. The database keeps those two per entry, so a context costs what the context holds, not
  what the session holds;
- the context inspector reads :func:`context_nodes` (which entry each message comes from);
- :func:`context_json` takes that tail as rows, each message entry's message still as its stored
  JSON: pi uses such a message unchanged, so the context API writes those bytes out undecoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
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
            model = state.model
            if (  # the model in force again (most replies): the same state, without building its dict
                model is not None
                and len(model) == 2
                and message.get("model", _ABSENT) == model.get("modelId")
                and message.get("provider", _ABSENT) == model.get("provider")
            ):
                return state
            return _with_model(state, _model(message, "provider", "model"))
        return state
    if kind == "thinking_level_change":
        return PathState(data.get("thinkingLevel"), state.model, state.compaction_id)
    if kind == "model_change":
        return _with_model(state, _model(data, "provider", "modelId"))
    if kind == "compaction":
        return PathState(state.thinking_level, state.model, entry_id)
    return state


_ABSENT: Any = object()


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


Message = dict[str, Any]  # a context message


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
    return entry_message(node)


def context_plan(
    kinds: Sequence[str], ids: Sequence[str], first_kept: Callable[[int], object]
) -> tuple[int | None, tuple[range, ...]]:
    """pi's rule as places in a path (each entry's type and id; first_kept(i): the firstKeptEntryId
    of the compaction at i): the last compaction's place (its summary leads the context; None if
    there is none), then the runs of entries whose messages follow it, in order (the compactions
    among them, and entries that stand for no message, give none). Lists, not nodes: a long
    context's path is read as rows, and its messages placed without a node per entry."""
    if "compaction" not in kinds:
        return None, (range(len(kinds)),)
    last = len(kinds) - 1 - list(reversed(kinds)).index("compaction")
    kept = first_kept(last)
    try:
        first = ids.index(kept, 0, last)
    except ValueError:  # not on the path before the compaction: only what follows it
        first = last
    return last, (range(first, last), range(last + 1, len(kinds)))


def context_nodes(path: Sequence[Node]) -> list[tuple[Node, Message]]:
    """pi's rule (context_plan): the entries whose messages make the context at the end of path, in
    the order the model receives them (the last compaction's summary first, then the entries it
    kept, then the rest), each with its message. path must reach back at least to the first kept
    entry of the last compaction on it (or to the root when there is no compaction)."""
    compaction, runs = context_plan(
        [n.type for n in path], [n.id for n in path], lambda i: path[i].data.get("firstKeptEntryId")
    )
    out: list[tuple[Node, Message]] = []
    if compaction is not None:
        summary = entry_message(path[compaction])
        assert summary is not None  # a compaction always stands for its summary message
        out.append((path[compaction], summary))
    for run in runs:
        for i in run:
            message = _context_message(path[i])
            if message is not None:
                out.append((path[i], message))
    return out


# A path as rows: (entry id, parent id, type, body), body being a message entry's message as its
# stored JSON (None if it is not an object) and any other entry's whole line.
Row = tuple[str, str | None, str, bytes | None]


def context_json(rows: Sequence[Row], *, leaf_id: str, thinking_level: Any, model: Mapping[str, Any] | None) -> bytes:
    """context_from_path's context at the end of a path given as rows, as JSON (orjson's bytes):
    each message entry's message is its stored JSON, copied in as it is (pi uses it unchanged);
    only the few other entries' lines are parsed. TypeError where orjson cannot write a built
    message (an integer beyond 64 bits)."""
    kinds = [r[2] for r in rows]
    lines: dict[int, Node] = {}

    def node(i: int) -> Node:
        if i not in lines:
            r = rows[i]
            lines[i] = Node(id=r[0], parent_id=r[1], type=r[2], data=jsjson.loads(r[3] or b"{}"))
        return lines[i]

    compaction, runs = context_plan(kinds, [r[0] for r in rows], lambda i: node(i).data.get("firstKeptEntryId"))
    messages: list[bytes] = []
    if compaction is not None:
        messages.append(orjson.dumps(entry_message(node(compaction))))
    for run in runs:
        for i in run:
            if kinds[i] == "message":
                body = rows[i][3]
                if body is not None and body[:1] == b"{":
                    messages.append(body)
            elif kinds[i] in _BUILT:
                built = _context_message(node(i))
                if built is not None:
                    messages.append(orjson.dumps(built))
    head = b'{"leafId":' + orjson.dumps(leaf_id) + b',"messages":['
    tail = b'],"thinkingLevel":' + orjson.dumps(thinking_level) + b',"model":' + orjson.dumps(model) + b"}"
    if not messages:
        return head + tail
    # One copy of the messages: the head and tail ride on the first and last.
    messages[0] = head + messages[0]
    messages[-1] = messages[-1] + tail
    return b",".join(messages)


# The entries besides messages that give a context message (entry_message's; a compaction leads instead).
_BUILT = frozenset(("custom_message", *_SUMMARY_MESSAGES)) - {"compaction"}


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
