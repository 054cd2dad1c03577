"""selectors.session_context_json: the context as JSON with message entries' messages copied from
their stored lines. Once parsed it must equal session_context, the context built and decoded."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessions_app.core import jsjson
from sessions_app.models import Entry, Session
from sessions_app.store import selectors
from sessions_app.store.importing import pipeline
from tests.generate import generate
from tests.paths import HANDMADE, LARGE_SESSION

pytestmark = pytest.mark.django_db


def as_js(value: Any) -> Any:
    """The value as JavaScript holds it: integers beyond 2**53 are doubles (the stored text of one
    may parse to an int or a float, depending on which parser took the whole document)."""
    if isinstance(value, dict):
        return {k: as_js(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_js(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > jsjson.MAX_SAFE_INTEGER:
        return float(value)
    return value


def assert_same_at(session: Session, leaves: list[str | None]) -> int:
    checked = 0
    for leaf in leaves:
        fast = selectors.session_context_json(session=session, leaf_id=leaf)
        slow = selectors.session_context(session=session, leaf_id=leaf)
        # jsjson: orjson refuses the lone surrogates pi may write
        assert as_js(jsjson.loads(fast)) == as_js(slow), leaf
        checked += len(slow["messages"])
    return checked


def some_entries(session: Session, count: int) -> list[str | None]:
    ids = list(Entry.objects.filter(session=session).order_by("seq").values_list("entry_id", flat=True))
    return [None, *random.Random(7).sample(ids, min(count, len(ids)))]


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_branched_sessions(alice, seed):
    data = generate(3000, seed, compactions=4, labels=20, branch_summary_prob=0.8, custom_prob=0.1)
    session = pipeline.session_import(owner=alice, data=data).session
    types = set(Entry.objects.filter(session=session).values_list("type", flat=True))
    assert {"compaction", "branch_summary", "custom_message", "message"} <= types
    assert assert_same_at(session, some_entries(session, 80)) > 1000


@pytest.mark.parametrize("path", [LARGE_SESSION, *sorted(HANDMADE.glob("*.jsonl"))], ids=lambda p: Path(p).name)
def test_pi_fixture_and_handmade_files(alice, path):
    session = pipeline.session_import(owner=alice, data=path.read_bytes()).session
    assert_same_at(session, some_entries(session, 60))


def test_lines_not_written_as_pi_writes_them(alice):
    # Spaces, escapes pi would not write, a member after the message, and numbers in other forms:
    # the copy is the message, whatever the line's shape.
    lines = [
        b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
        b'{ "type" : "message", "id":"a", "parentId":null, "timestamp":"2026-01-01T00:00:01.000Z",'
        b' "message" : { "role" : "user", "content" : "caf\\u00e9 \\/ \\ud83d\\ude00", "timestamp" : 1 } }',
        b'{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":'
        b'"assistant","content":[{"type":"text","text":"}\\"}"}],"usage":{"cost":{"total":1.5E-7,"input":0.000009}},'
        b'"timestamp":2},"after":{"x":"}"}}',
        b'{"type":"message","id":"d","parentId":"b","timestamp":"2026-01-01T00:00:04.000Z",'
        b'"message":{"role":"user","content":"x","timestamp":3,"n":12345678901234567890}}',
    ]
    result = pipeline.session_import(owner=alice, data=b"\n".join(lines) + b"\n")
    session = result.session
    body = orjson.loads(selectors.session_context_json(session=session, leaf_id="d"))
    assert body == selectors.session_context(session=session, leaf_id="d")
    assert [m["timestamp"] for m in body["messages"]] == [1, 2, 3]
    assert body["messages"][0]["content"] == "caf\u00e9 / \U0001f600"
    assert body["messages"][1]["content"][0]["text"] == '}"}'
    assert body["messages"][1]["usage"]["cost"] == {"total": 1.5e-7, "input": 0.000009}
    assert as_js(body["messages"][2]["n"]) == float(12345678901234567890)


def test_an_empty_session_and_an_unknown_leaf(alice):
    data = b'{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
    session = pipeline.session_import(owner=alice, data=data).session
    assert orjson.loads(selectors.session_context_json(session=session)) == {
        "leafId": None,
        "messages": [],
        "thinkingLevel": "off",
        "model": None,
    }
    with pytest.raises(Exception, match="nope"):
        selectors.session_context_json(session=session, leaf_id="nope")
