"""core/usage_tree.py: sums per branch from chunked runs, checked against walking each path."""

from __future__ import annotations

import random
from typing import Any

from sessions_app.core.usage_tree import UsageChunk, cost_by_day, path_replies, session_usage, usage_by
from tests.builders import paid


def reply(cost: float, tokens: int, model: str = "m", ts: int = 0) -> dict[str, Any]:
    return {"role": "assistant", "provider": "p", "model": model, "usage": paid(cost, tokens), "timestamp": ts}


def chunked(entries: list[tuple[str, str | None, dict[str, Any] | None, bool]], size: int) -> list[UsageChunk]:
    """entries: (id, parent, assistant message or None, is a message), cut into chunks of `size`."""
    at = {e[0]: k for k, e in enumerate(entries)}
    chunks: list[UsageChunk] = []
    for k, (entry_id, parent, message, is_message) in enumerate(entries):
        if k % size == 0:
            chunks.append(UsageChunk(first=k))
        chunks[-1].add(entry_id, at.get(parent, -1) if parent else -1, is_message, message, 0)
    return chunks


def random_tree(n: int, seed: int) -> list[tuple[str, str | None, dict[str, Any] | None, bool]]:
    rng = random.Random(seed)
    out: list[tuple[str, str | None, dict[str, Any] | None, bool]] = []
    for k in range(n):
        parent = None if k == 0 or rng.random() < 0.02 else out[k - 1 if rng.random() < 0.8 else rng.randrange(k)][0]
        kind = rng.random()
        message = reply(round(rng.random(), 3), rng.randrange(1000), rng.choice("ab")) if kind < 0.4 else None
        out.append((f"e{k}", parent, message, kind < 0.7))
    return out


def walked(entries: list[tuple[str, str | None, dict[str, Any] | None, bool]], leaf: str) -> tuple[float, int, int]:
    by_id = {e[0]: e for e in entries}
    cost, tokens, messages = 0.0, 0, 0
    at: str | None = leaf
    while at is not None:
        _, parent, message, is_message = by_id[at]
        messages += is_message
        if message is not None:
            cost += message["usage"]["cost"]["total"]
            tokens += message["usage"]["totalTokens"]
        at = parent
    return cost, tokens, messages


def test_branches_match_walking_every_path_whatever_the_chunk_size():
    entries = random_tree(700, seed=2)
    parents = {e[1] for e in entries}
    leaves = [e[0] for e in entries if e[0] not in parents]
    for size in (1, 7, 64, 1000):
        found = session_usage(chunked(entries, size), leaves[3])
        assert [b.leaf_id for b in found.branches] == leaves
        for b in found.branches:
            cost, tokens, messages = walked(entries, b.leaf_id)
            assert (round(b.cost, 6), b.total_tokens, b.messages) == (round(cost, 6), tokens, messages)
            assert b.current == (b.leaf_id == leaves[3])
        replies = [e[2] for e in entries if e[2] is not None]
        assert round(found.total.cost, 6) == round(sum(r["usage"]["cost"]["total"] for r in replies), 6)
        assert {m.model: m.replies for m in found.by_model} == {
            m: sum(r["model"] == m for r in replies) for m in ("a", "b")
        }


def test_an_unknown_parent_makes_a_root():
    chunks = chunked([("a", "gone", reply(1.0, 5), True), ("b", "a", reply(2.0, 6), True)], 8)
    assert [(b.leaf_id, b.cost) for b in session_usage(chunks, "b").branches] == [("b", 3.0)]


def test_path_replies_per_user_and_per_day():
    day = 86_400_000
    entries = [
        ("u", None, None, True),
        ("a1", "u", reply(1.0, 10, ts=day + 5), True),
        ("a2", "u", reply(2.0, 20, ts=3 * day), True),
        ("u2", "a2", None, True),
        ("a3", "u2", reply(4.0, 40, ts=3 * day + 1), True),
    ]
    chunks = chunked(entries, 2)
    assert [(i, u.total_tokens) for i, u in path_replies(chunks, "a3")] == [("a2", 20), ("a3", 40)]
    assert path_replies(chunks, None) == []
    assert {k: u.cost for k, u in usage_by(chunks, {"a1": "ann", "a3": "ann", "a2": "bo"}).items()} == {
        "ann": 5.0, "bo": 2.0,
    }  # fmt: skip
    assert cost_by_day(chunks) == {1: 1.0, 3: 6.0}
