"""What a session's tree cost, pure: the whole session, every branch, every model.

Built from UsageChunks, compact facts about consecutive entries in file order that
store/usage_facts.py caches per chunk of seqs. A parent always comes before its children, and most
entries are the child of the entry just before them: a chunk splits into runs of such entries and
holds each entry's sums along its run (cost, tokens, messages). Whole paths then take one step per
run (the run's base is its parent's path), not one per entry, so a warm 100k-entry tree costs a
few thousand steps and the chunks hold only lists of plain numbers (cheap to unpickle).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessions_app.core.compaction import number
from sessions_app.core.usage import Usage, message_usage

# An assistant message, as a chunk keeps it: input, output, cacheRead, cacheWrite, totalTokens, cost,
# the index of its (provider, model) in the chunk's models, and its time (ms).
Reply = tuple[float, float, float, float, float, float, int, int]
REPLY_FIELDS = 8
_ZERO = (0.0, 0.0, 0)


@dataclass(slots=True)
class UsageChunk:
    """Numbers in arrays: a cached chunk unpickles as a few copies of memory, not thousands of objects."""

    first: int = 0  # this chunk's first entry's position in the whole session's file order (seq - 1)
    ids: list[str] = field(default_factory=list)
    run_starts: array[int] = field(default_factory=lambda: array("q"))  # index where each run starts
    # Each run's first entry's parent, as a position in the whole session (-1: a root, or a parent
    # no line holds, which pi's getTree also makes a root).
    run_parents: array[int] = field(default_factory=lambda: array("q"))
    cost: array[float] = field(default_factory=lambda: array("d"))  # per entry: its run's sums, itself included
    tokens: array[float] = field(default_factory=lambda: array("d"))
    messages: array[int] = field(default_factory=lambda: array("q"))
    reply_at: array[int] = field(default_factory=lambda: array("q"))  # indices of the assistant messages
    replies: array[float] = field(default_factory=lambda: array("d"))  # REPLY_FIELDS numbers per reply
    models: list[tuple[str, str]] = field(default_factory=list)  # (provider, model) seen in this chunk
    # Per model (as indexed in models): the Usage fields summed and the replies counted.
    model_sums: list[list[float]] = field(default_factory=list)
    authors: dict[int, int] = field(default_factory=dict)  # index of an assistant message -> who wrote it

    def add(
        self,
        entry_id: str,
        parent_at: int,
        is_message: bool,
        message: Mapping[str, Any] | None,
        ts_ms: int,
        author: int | None = None,
    ) -> None:
        """The next entry in file order. parent_at: its parent's position in the session (-1: none);
        message: its message's JSON object if it is an assistant's; author: the user who wrote it in piweb."""
        at = len(self.ids)
        if at and parent_at == self.first + at - 1:
            cost, tokens, count = self.cost[-1], self.tokens[-1], self.messages[-1]
        else:
            self.run_starts.append(at)
            self.run_parents.append(parent_at)
            cost, tokens, count = _ZERO
        usage = message_usage(message) if message is not None else None
        if usage is not None:
            cost += usage.cost
            tokens += usage.total_tokens
            # The message's own time where it has one (as pi's session list dates them), else the entry's.
            when = message.get("timestamp") if message is not None else None
            ms = int(number(when)) or ts_ms
            reply = _reply(usage, self._model(message), ms)
            self.reply_at.append(at)
            self.replies.extend(reply)
            if author is not None:
                self.authors[at] = author
            sums = self.model_sums[reply[6]]
            for k in range(6):
                sums[k] += reply[k]
            sums[6] += 1
        self.ids.append(entry_id)
        self.cost.append(cost)
        self.tokens.append(tokens)
        self.messages.append(count + 1 if is_message else count)

    def reply(self, n: int) -> Reply:
        r = self.replies[n * REPLY_FIELDS : (n + 1) * REPLY_FIELDS]
        return (r[0], r[1], r[2], r[3], r[4], r[5], int(r[6]), int(r[7]))

    def _model(self, message: Mapping[str, Any] | None) -> int:
        found = message or {}
        provider, model = found.get("provider"), found.get("model")
        key = (provider if isinstance(provider, str) else "", model if isinstance(model, str) else "")
        if key not in self.models:
            self.models.append(key)
            self.model_sums.append([0.0] * 7)
        return self.models.index(key)


def _reply(u: Usage, model: int, ts_ms: int) -> Reply:
    return (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, u.cost, model, ts_ms)


def _usage(sums: list[float]) -> Usage:
    """A Usage of summed fields; token counts as integers where they are whole (JSON: 12, not 12.0)."""
    counts = [int(v) if float(v).is_integer() else v for v in sums[:5]]
    return Usage(counts[0], counts[1], counts[2], counts[3], counts[4], sums[5])


def reply_usage(r: Reply) -> Usage:
    return Usage(r[0], r[1], r[2], r[3], r[4], r[5])


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
        u = self.usage
        return {"provider": self.provider, "model": self.model, "cost": u.cost, "totalTokens": u.total_tokens}


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


@dataclass(slots=True)
class _Joined:
    """The chunks' arrays joined, and each run's base (the sums of the path to its parent)."""

    cost: array[float] = field(default_factory=lambda: array("d"))
    tokens: array[float] = field(default_factory=lambda: array("d"))
    messages: array[int] = field(default_factory=lambda: array("q"))
    starts: list[int] = field(default_factory=list)
    parents: array[int] = field(default_factory=lambda: array("q"))
    bases: list[tuple[float, float, int]] = field(default_factory=list)

    def run_of(self, at: int) -> int:
        return bisect_right(self.starts, at) - 1


def _join(chunks: Sequence[UsageChunk]) -> _Joined:
    j = _Joined()
    for chunk in chunks:
        j.starts += [chunk.first + s for s in chunk.run_starts]
        j.cost += chunk.cost
        j.tokens += chunk.tokens
        j.messages += chunk.messages
        j.parents += chunk.run_parents
    bases = j.bases
    for run, at in enumerate(j.parents):
        if at < 0 or at >= j.starts[run]:  # a root (a parent after its child: no stored file has one)
            bases.append(_ZERO)
        else:
            c, t, m = bases[j.run_of(at)]
            bases.append((c + j.cost[at], t + j.tokens[at], m + j.messages[at]))
    return j


def session_usage(chunks: Sequence[UsageChunk], leaf_id: str | None) -> SessionUsage:
    """Totals (each message once), one Branch per leaf of the tree (bookkeeping entries too, as pi's
    getTree shows them) and the assistant messages grouped by (provider, model)."""
    j = _join(chunks)
    has_children = set(j.parents)
    branches = []
    firsts = [chunk.first for chunk in chunks]
    size = len(j.cost)
    ends = [*j.starts[1:], size] if j.starts else []
    for run, end in enumerate(ends):
        last = end - 1
        if last not in has_children:
            chunk = chunks[bisect_right(firsts, last) - 1]
            entry_id = chunk.ids[last - chunk.first]
            c, t, m = j.bases[run]
            branches.append(
                Branch(entry_id, c + j.cost[last], t + j.tokens[last], m + j.messages[last], entry_id == leaf_id)
            )
    models: dict[tuple[str, str], list[float]] = {}
    for chunk in chunks:
        for key, sums in zip(chunk.models, chunk.model_sums, strict=True):
            found = models.setdefault(key, [0.0] * 7)
            for k in range(7):
                found[k] += sums[k]
    by_model = [ModelUsage(p, m, _usage(sums), int(sums[6])) for (p, m), sums in models.items()]
    by_model.sort(key=lambda m: (-m.usage.cost, m.provider, m.model))
    total = sum((m.usage for m in by_model), Usage())
    return SessionUsage(total, branches, by_model)


def path_replies(chunks: Sequence[UsageChunk], leaf_id: str | None) -> list[tuple[str, Usage]]:
    """The assistant messages on the path root..leaf_id, root first, with their entry ids (the
    context size along the path: each one's totalTokens is what the model was sent)."""
    j = _join(chunks)
    ids: list[str] = []
    replies: dict[int, Reply] = {}
    for chunk in chunks:
        ids += chunk.ids
        replies.update((chunk.first + at, chunk.reply(n)) for n, at in enumerate(chunk.reply_at))
    at: int | None = ids.index(leaf_id) if leaf_id in ids else None
    found: list[tuple[str, Usage]] = []
    while at is not None:
        run = j.run_of(at)
        for k in range(at, j.starts[run] - 1, -1):
            if k in replies:
                found.append((ids[k], reply_usage(replies[k])))
        parent = j.parents[run]
        at = parent if 0 <= parent < j.starts[run] else None
    found.reverse()
    return found


def usage_by(chunks: Iterable[UsageChunk], key_of: Mapping[str, Any]) -> dict[Any, Usage]:
    """The replies whose entry id key_of maps, summed per key (e.g. per user who ran the turn)."""
    sums: dict[Any, Usage] = {}
    for chunk in chunks:
        for n, at in enumerate(chunk.reply_at):
            key = key_of.get(chunk.ids[at])
            if key is not None:
                sums[key] = sums.get(key, Usage()) + reply_usage(chunk.reply(n))
    return sums


def reply_authors(chunks: Iterable[UsageChunk], mirrored: Sequence[Sequence[int]] = ()) -> dict[str, int]:
    """{assistant message's entry id: the user who wrote it} for those written in piweb with an
    author; not those in the mirrored seq ranges (Session.mirror_seqs: an import names its
    importer as every entry's author, which wrote none of them)."""
    return {
        chunk.ids[at]: author
        for chunk in chunks
        for at, author in chunk.authors.items()
        if not any(low <= chunk.first + at + 1 <= high for low, high in mirrored)
    }


def cost_by_day(chunks: Iterable[UsageChunk]) -> dict[int, float]:
    """Cost per UTC day (days since the epoch) of the replies' entry times."""
    days: dict[int, float] = {}
    for chunk in chunks:
        for n in range(len(chunk.reply_at)):
            reply = chunk.reply(n)
            day = reply[7] // 86_400_000
            days[day] = days.get(day, 0.0) + reply[5]
    return days
