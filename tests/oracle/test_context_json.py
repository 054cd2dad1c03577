"""GET /context's JSON (selectors.session_context_json) equals pi's buildSessionContext on lines pi
would not write: duplicate "message" members, odd spacing, numbers and escapes JSON.stringify
writes otherwise. Read through the message spans (models.MessageSpan) and without them (the
database's JSON functions), both as pi parses the lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessions_app.core import jsjson
from sessions_app.models import MessageSpan, Session
from sessions_app.store import selectors
from sessions_app.store.importing import pipeline
from tests.oracle.oracle import PiOracle, assert_same_json

pytestmark = [pytest.mark.oracle, pytest.mark.django_db]

T = '"timestamp":"2026-01-01T00:00:0{}.000Z"'
LINES = [
    b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
    # Two "message" members: JSON.parse keeps the last (SQLite's `->` would take the first).
    b'{"type":"message","id":"a","parentId":null,' + T.format(1).encode() + b","
    b'"message":{"role":"user","content":"first","timestamp":1},'
    b'"message":{"role":"user","content":"second","timestamp":1}}',
    # The second spelt with an escape, and the first's bytes repeated in another member.
    b'{"type":"message","id":"b","parentId":"a",' + T.format(2).encode() + b","
    b'"message":{"role":"assistant","content":[{"type":"text","text":"decoy"}],"timestamp":2},'
    b'"mess\\u0061ge":{"role":"assistant","content":[{"type":"text","text":"real"}],"timestamp":2},'
    b'"copy":{"role":"assistant","content":[{"type":"text","text":"decoy"}],"timestamp":2}}',
    # Spaces everywhere, escapes pi would not write, a member after the message.
    b'{ "type" : "message" , "id" : "c" , "parentId" : "b" , ' + T.format(3).encode() + b' , "message" : '
    b'{ "role" : "user" , "content" : "caf\\u00e9 \\/ \\ud83d\\ude00 \xc3\xa9" , "timestamp" : 3 } , "after" : { } }',
    # Numbers in forms JSON.stringify writes otherwise, and in the forms it writes.
    b'{"type":"message","id":"d","parentId":"c",' + T.format(4).encode() + b',"message":{"role":"assistant",'
    b'"content":[],"usage":{"cost":{"total":1.5E-7,"input":0.000009,"output":5.0,"cacheRead":-0,'
    b'"cacheWrite":1e+21,"big":12345678901234567890,"neg":-1e-7,"e":2E3}},"timestamp":4}}',
    # As JSON.stringify writes them (orjson would write 9e-6), then not (it would write 1e+21).
    b'{"type":"message","id":"e","parentId":"d",' + T.format(5).encode() + b',"message":{"role":"user",'
    b'"content":"x","n":1e+21,"m":0.000009,"timestamp":5}}',
    b'{"type":"message","id":"f","parentId":"e",' + T.format(6).encode() + b',"message":{"role":"user",'
    b'"content":"y","n":1e21,"timestamp":6}}',
]


def _contexts(session: Session, leaves: list[str]) -> list[dict[str, Any]]:
    out = []
    for leaf in leaves:
        body = jsjson.loads(selectors.session_context_json(session=session, leaf_id=leaf))
        assert body.pop("leafId") == leaf
        out.append(body)
    return out


def test_hostile_lines_give_pi_s_context(alice: Any, pi_oracle: PiOracle, tmp_path: Path) -> None:
    data = b"\n".join(LINES) + b"\n"
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(data)
    leaves = ["a", "b", "c", "d", "e", "f"]
    [pi] = pi_oracle.batch([{"file": str(path), "leaves": leaves}])
    session = pipeline.session_import(owner=alice, data=data).session
    spanned = MessageSpan.objects.filter(session_id=session.pk).order_by("seq").values_list("seq", flat=True)
    assert list(spanned) == [1, 2, 5]  # written compactly, as orjson or JSON.stringify would write them
    assert pi["contexts"][1]["messages"][1]["content"][0]["text"] == "real"
    for leaf, ours, theirs in zip(leaves, _contexts(session, leaves), pi["contexts"], strict=True):
        assert_same_json(ours, theirs, f"with spans, at {leaf}")
    MessageSpan.objects.filter(session_id=session.pk).delete()
    for leaf, ours, theirs in zip(leaves, _contexts(session, leaves), pi["contexts"], strict=True):
        assert_same_json(ours, theirs, f"without spans, at {leaf}")
