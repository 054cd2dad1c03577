"""context.message_span: the bytes of a line that serialise exactly its message, or None."""

from __future__ import annotations

import orjson

from sessions_app.core import jsjson
from sessions_app.core.context import message_span


def span_of(line: bytes) -> bytes | None:
    found = message_span(line, jsjson.loads(line))
    return None if found is None else line[found[0] : found[0] + found[1]]


def test_pi_s_lines_have_their_message_last():
    line = b'{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"caf\xc3\xa9"}}'
    assert span_of(line) == b'{"role":"user","content":"caf\xc3\xa9"}'


def test_the_span_is_the_last_duplicate_and_only_text_equal_to_it():
    line = b'{"type":"message","message":{"role":"user","content":"A"},"message":{"role":"user","content":"B"}}'
    assert span_of(line) == b'{"role":"user","content":"B"}'
    # The message's bytes earlier in the line, under another member: equal bytes, so equal message.
    decoy = b'{"type":"message","x":{"role":"user"},"mess\\u0061ge":{"role":"user"},"after":1}'
    found = message_span(decoy, jsjson.loads(decoy))
    assert found is not None and orjson.loads(decoy[found[0] : found[0] + found[1]]) == {"role": "user"}


def test_numbers_as_json_stringify_writes_them():
    assert span_of(b'{"type":"message","message":{"a":0.000009,"b":1e+21,"c":1.5e-7}}') == (
        b'{"a":0.000009,"b":1e+21,"c":1.5e-7}'
    )


def test_no_span_where_no_serialiser_writes_the_text():
    assert span_of(b'{"type":"message","message":{ "role":"user"}}') is None
    assert span_of(b'{"type":"message","message":{"n":1.5E-7}}') is None
    assert span_of(b'{"type":"message","message":{"s":"\\u0041"}}') is None
    assert span_of(b'{"type":"message","message":"{}"}') is None  # not an object
    assert span_of(b'{"type":"custom_message","message":{}}') is None
    # Beyond orjson's integers, and written by JSON.stringify as a double: the JSON functions read it.
    assert span_of(b'{"type":"message","message":{"n":123456789012345678901234567890}}') is None
