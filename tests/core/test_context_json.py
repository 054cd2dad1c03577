"""context.context_json (a path as rows, message entries' messages as stored JSON) gives, once
parsed, exactly context_from_path's context for the same path of parsed nodes."""

from __future__ import annotations

import random
from typing import Any
from unittest import TestCase

import orjson

from sessions_app.core import context as ctx
from sessions_app.core.tree import Node


def random_path(rng: random.Random, length: int) -> list[Node]:
    nodes: list[Node] = []
    for i in range(length):
        eid = f"e{i}"
        parent = nodes[-1].id if nodes else None
        kind = rng.choice(["message"] * 6 + ["compaction", "branch_summary", "custom_message", "label", "model_change"])
        data: dict[str, Any] = {"type": kind, "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
        if kind == "message":
            data["message"] = rng.choice(
                [{"role": "user", "content": f"m{i}", "timestamp": i}, {"role": "assistant", "content": []}, "odd"]
            )
        elif kind == "compaction":
            # an earlier entry, the compaction itself, a later one or none on the path
            kept = rng.choice([f"e{rng.randrange(i + 1)}", f"e{i + 3}", "missing"])
            data.update(summary=f"s{i}", firstKeptEntryId=kept, tokensBefore=i)
        elif kind == "branch_summary":
            data.update(summary=rng.choice(["", f"b{i}"]), fromId="x")
        elif kind == "custom_message":
            data.update(customType="t", content=f"c{i}", display=True)
            if rng.random() < 0.5:
                data["details"] = {"n": i}
        nodes.append(Node(id=eid, parent_id=parent, type=kind, data=data))
    return nodes


def as_rows(path: list[Node]) -> list[ctx.Row]:
    rows: list[ctx.Row] = []
    for n in path:
        if n.type == "message":
            message = n.data["message"]
            rows.append((n.id, n.parent_id, n.type, orjson.dumps(message) if isinstance(message, dict) else None))
        else:
            rows.append((n.id, n.parent_id, n.type, orjson.dumps(n.data)))
    return rows


class ContextJsonTest(TestCase):
    def test_it_equals_context_from_path(self) -> None:
        rng = random.Random(3)
        compacted = 0
        for _ in range(400):
            path = random_path(rng, rng.randrange(0, 30))
            model = rng.choice([None, {"provider": "p", "modelId": "m"}])
            expected = {"leafId": "leaf", **ctx.context_from_path(path, thinking_level="high", model=model)}
            got = orjson.loads(ctx.context_json(as_rows(path), leaf_id="leaf", thinking_level="high", model=model))
            self.assertEqual(got, expected)
            compacted += any(n.type == "compaction" for n in path) and len(expected["messages"]) > 1
        self.assertGreater(compacted, 50)

    def test_it_copies_the_stored_message_bytes(self) -> None:
        # Written as stored (spacing, escapes), not decoded and written again.
        stored = b'{ "role" : "user", "content" : "caf\\u00e9" }'
        rows: list[ctx.Row] = [("a", None, "message", stored)]
        body = ctx.context_json(rows, leaf_id="a", thinking_level="off", model=None)
        self.assertEqual(body, b'{"leafId":"a","messages":[' + stored + b'],"thinkingLevel":"off","model":null}')

    def test_an_empty_path(self) -> None:
        body = ctx.context_json([], leaf_id="a", thinking_level="off", model=None)
        self.assertEqual(orjson.loads(body), {"leafId": "a", "messages": [], "thinkingLevel": "off", "model": None})

    def test_the_summary_leads_and_only_kept_entries_follow(self) -> None:
        path = random_path(random.Random(0), 0)
        entries: list[tuple[str, dict[str, Any]]] = [
            ("message", {"message": {"role": "user", "content": "dropped"}}),
            ("message", {"message": {"role": "user", "content": "kept"}}),
            ("compaction", {"summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 5}),
            ("message", {"message": {"role": "user", "content": "after"}}),
        ]
        for i, (kind, data) in enumerate(entries):
            path.append(Node(id=f"e{i}", parent_id=f"e{i - 1}" if i else None, type=kind, data=data))
        got = orjson.loads(ctx.context_json(as_rows(path), leaf_id="e3", thinking_level="off", model=None))
        self.assertEqual([m.get("content") or m.get("summary") for m in got["messages"]], ["S", "kept", "after"])
