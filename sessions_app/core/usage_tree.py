"""What a session's tree cost, pure: the whole session, every branch, every model.

Built from compact facts per entry (UsageChunk: id, parent, whether it is a message, and for an
assistant message its usage and model), which store/usage_facts.py caches per chunk of seqs. A
parent always comes before its children in file order, so one pass in that order gives every
entry the sums of its path (root..entry): a prefix sum over parents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core.usage import NONE, Usage, message_usage


@dataclass(frozen=True, slots=True)
class Reply:
    """An assistant message: what it cost, who ran it and when (ts_ms: the entry's time)."""

    usage: Usage
    provider: str
    model: str
    ts_ms: int


@dataclass(slots=True)
class UsageChunk:
    """The facts of consecutive entries in file order (one cached unit)."""

    ids: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    messages: bytearray = field(default_factory=bytearray)  # 1 where the entry is a message
    replies: dict[int, Reply] = field(default_factory=dict)  # index in this chunk -> its reply

    def add(self, entry_id: str, parent_id: str | None, is_message: bool, reply: Reply | None) -> None:
        if reply is not None:
            self.replies[len(self.ids)] = reply
        self.ids.append(entry_id)
        self.parents.append(parent_id)
        self.messages.append(1 if is_message else 0)


def reply_of(message: Mapping[str, Any], ts_ms: int) -> Reply | None:
    """The Reply of a message (its JSON object), None unless it is an assistant message."""
    usage = message_usage(message)
    if usage is None:
        return None
    provider, model = message.get("provider"), message.get("model")
    return Reply(usage, provider if isinstance(provider, str) else "", model if isinstance(model, str) else "", ts_ms)


@dataclass(frozen=True, slots=True)
class Branch:
    leaf_id: str
    cost: float
    total_tokens: float
    messages: int
    current: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "leafId": self.leaf_id,
            "cost": self.cost,
            "totalTokens": self.total_tokens,
            "messages": self.messages,
            "current": self.current,
        }


@dataclass(frozen=True, slots=True)
class ModelUsage:
    provider: str
    model: str
    usage: Usage
    replies: int

    def as_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "cost": self.usage.cost,
            "totalTokens": self.usage.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class SessionUsage:
    total: Usage
    branches: list[Branch]  # one per leaf (entry without children), in the leaves' file order
    by_model: list[ModelUsage]  # most expensive first

    def as_json(self) -> dict[str, Any]:
        return {
            "total": self.total.as_json(),
            "branches": [b.as_json() for b in self.branches],
            "byModel": [m.as_json() for m in self.by_model],
        }


def session_usage(chunks: Sequence[UsageChunk], leaf_id: str | None) -> SessionUsage:
    """Totals (each message once), one Branch per leaf of the tree (bookkeeping entries too, as pi's
    getTree shows them) and the assistant messages grouped by (provider, model)."""
    # Per entry: (cost, totalTokens, messages) of its path. An unknown parent (a line a partial
    # import skipped) makes a root, as in pi's getTree.
    path: dict[str, tuple[float, float, int]] = {}
    has_children: set[str] = set()
    start = (0.0, 0, 0)
    total = NONE
    models: dict[tuple[str, str], tuple[Usage, int]] = {}
    get = path.get
    for chunk in chunks:
        replies = chunk.replies
        for i, (entry_id, parent_id, is_message) in enumerate(
            zip(chunk.ids, chunk.parents, chunk.messages, strict=True)
        ):
            cost, tokens, count = get(parent_id, start) if parent_id is not None else start
            if parent_id is not None:
                has_children.add(parent_id)
            if is_message:
                count += 1
                reply = replies.get(i)
                if reply is not None:
                    usage = reply.usage
                    cost += usage.cost
                    tokens += usage.total_tokens
                    total = total + usage
                    key = (reply.provider, reply.model)
                    sum_, n = models.get(key, (NONE, 0))
                    models[key] = (sum_ + usage, n + 1)
            path[entry_id] = (cost, tokens, count)
    branches = [
        Branch(entry_id, *sums, current=entry_id == leaf_id)
        for entry_id, sums in path.items()
        if entry_id not in has_children
    ]
    by_model = [ModelUsage(p, m, u, n) for (p, m), (u, n) in models.items()]
    by_model.sort(key=lambda m: (-m.usage.cost, m.provider, m.model))
    return SessionUsage(total, branches, by_model)


def path_replies(chunks: Sequence[UsageChunk], leaf_id: str | None) -> list[tuple[str, Reply]]:
    """The assistant messages on the path root..leaf_id, root first, with their entry ids (the
    context size along the path: each reply's totalTokens is what the model was sent)."""
    parent: dict[str, str | None] = {}
    reply_at: dict[str, Reply] = {}
    for chunk in chunks:
        parent.update(zip(chunk.ids, chunk.parents, strict=True))
        for i, reply in chunk.replies.items():
            reply_at[chunk.ids[i]] = reply
    found: list[tuple[str, Reply]] = []
    at, seen = leaf_id, set()
    while at is not None and at in parent and at not in seen:
        seen.add(at)
        if at in reply_at:
            found.append((at, reply_at[at]))
        at = parent[at]
    found.reverse()
    return found


def usage_by(chunks: Iterable[UsageChunk], key_of: Mapping[str, Any]) -> dict[Any, Usage]:
    """The replies whose entry id key_of maps, summed per key (e.g. per user who ran the turn)."""
    sums: dict[Any, Usage] = {}
    for chunk in chunks:
        for i, reply in chunk.replies.items():
            key = key_of.get(chunk.ids[i])
            if key is not None:
                sums[key] = sums.get(key, NONE) + reply.usage
    return sums


def cost_by_day(chunks: Iterable[UsageChunk]) -> dict[int, float]:
    """Cost per UTC day (days since the epoch) of the replies' entry times."""
    days: dict[int, float] = {}
    for chunk in chunks:
        for reply in chunk.replies.values():
            day = reply.ts_ms // 86_400_000
            days[day] = days.get(day, 0.0) + reply.usage.cost
    return days
