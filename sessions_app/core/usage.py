"""What assistant replies cost, pure: the tokens and dollars an assistant message's `usage` records.

pi writes `usage = {input, output, cacheRead, cacheWrite, totalTokens, cost: {..., total}}` on every
assistant message (reference/pi-session-format.md section 4). Every assistant message counts, aborted
and errored ones too: their tokens were billed. Older files lack `totalTokens`; pi's own rule
(calculateContextTokens) then sums the four counts, and so does this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sessions_app.core.compaction import calculate_context_tokens, number

Number = int | float


def cost_and_tokens(usage: object) -> tuple[float, Number]:
    """An assistant message's `usage`: its cost and total tokens (zero where it records none).
    message_usage's two figures, read without building a Usage: the listing reads every message
    of an import."""
    if type(usage) is not dict:
        return 0.0, 0
    cost = usage.get("cost")
    return (float(number(cost.get("total"))) if type(cost) is dict else 0.0), calculate_context_tokens(usage)


@dataclass(frozen=True, slots=True)
class Usage:
    input: Number = 0
    output: Number = 0
    cache_read: Number = 0
    cache_write: Number = 0
    total_tokens: Number = 0
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.total_tokens + other.total_tokens,
            self.cost + other.cost,
        )

    def as_json(self) -> dict[str, Number]:
        """The REST API's shape (pi's key names)."""
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cost": self.cost,
        }


NONE = Usage()


def message_usage(message: object) -> Usage | None:
    """An assistant message's usage (zero where it records none); None for any other message.
    (Parsed JSON holds dicts: checked as such, the Mapping ABC's check costs more per message.)"""
    if type(message) is not dict or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if type(usage) is not dict:
        return NONE
    cost, total_tokens = cost_and_tokens(usage)
    return Usage(
        input=number(usage.get("input")),
        output=number(usage.get("output")),
        cache_read=number(usage.get("cacheRead")),
        cache_write=number(usage.get("cacheWrite")),
        total_tokens=total_tokens,
        cost=cost,
    )


def entry_usage(entry: Mapping[str, Any]) -> Usage | None:
    """The usage of a stored entry (its JSON object) if it is an assistant message."""
    if entry.get("type") != "message":
        return None
    return message_usage(entry.get("message"))


def total(usages: Iterable[Usage | None]) -> Usage:
    # Summed field by field: a frozen Usage per step (found + usage) costs most of a long branch's total.
    fresh: Number = 0
    output: Number = 0
    read: Number = 0
    write: Number = 0
    tokens: Number = 0
    cost = 0.0
    for u in usages:
        if u is not None:
            fresh += u.input
            output += u.output
            read += u.cache_read
            write += u.cache_write
            tokens += u.total_tokens
            cost += u.cost
    return Usage(fresh, output, read, write, tokens, cost)
