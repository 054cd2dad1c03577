"""piformat.read_entries: each line read in place, judged by the same rules as validate_entry."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessions_app.core import jsjson, piformat
from sessions_app.core.piformat import Limits, Line, Problem
from tests.builders import entry

NEW_YEAR = "2026-01-01T00:00:00.000Z"
HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}'


def read_one(line: bytes, limits: Limits | None = None) -> piformat.Item:
    """The one item read from this line, between two neighbours full of brackets."""
    limits = limits or Limits()
    data = HEADER + b'\n{"x":[[[[[[1]]]]]]}\n' + line + b'\n{"y":[{},{},{}]}\n'
    header, problem = piformat.read_header(data, limits)
    assert header is not None and problem is None
    items = list(piformat.read_entries(data, header, limits))
    assert len(items) == 3
    return items[1]


def test_a_line_is_read_alone_and_in_place():
    line = json.dumps(entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi")).encode()
    item = read_one(line)
    assert isinstance(item, Line)
    assert (
        item.data == entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi")
        and item.raw == line.decode()
        and item.line == 3
    )
    assert item.ts_ms == 1767225600000 and item.preview == "user: hi"


def test_the_depth_bound_counts_the_line_only():
    line = json.dumps(entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi")).encode()
    own = 4  # the entry, its message, the content list, the text block
    assert isinstance(read_one(line, Limits(max_depth=own)), Line)
    item = read_one(line, Limits(max_depth=own - 1))
    assert isinstance(item, Problem) and item.line == 3 and "nests deeper than 3 levels" in item.message


_JSON = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}a"\\', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="[{a", max_size=2), inner, max_size=3),
    max_leaves=12,
)


@given(value=_JSON, max_depth=st.integers(min_value=0, max_value=8))
def test_the_depth_bound_never_misses_a_deep_value(value, max_depth):
    """Short lines skip the count (each level takes two brackets), and the count only bounds the
    walk (brackets in strings count too): the answer is always the walk's."""
    text = json.dumps(value, separators=(",", ":")).encode()
    assert piformat._too_deep(value, text, 0, len(text), max_depth) == jsjson.depth_exceeds(value, max_depth)


def test_a_line_as_deep_as_its_length_allows_is_judged():
    """Levels of brackets and nothing else, one level past the limit: the bound lets it through to
    the walk."""
    limit = 40
    deep = {"nest": json.loads("[" * limit + "]" * limit)}  # the entry is one level more: limit + 2
    line = json.dumps(entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi") | {"x": deep}).encode()
    item = read_one(line, Limits(max_depth=limit + 1))
    assert isinstance(item, Problem) and f"nests deeper than {limit + 1} levels" in item.message
    assert isinstance(read_one(line, Limits(max_depth=limit + 2)), Line)


def test_a_line_over_the_limit_is_a_problem():
    line = json.dumps(entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi")).encode()
    item = read_one(line, Limits(max_line_bytes=len(line) - 1))
    assert isinstance(item, Problem) and "over the limit" in item.message


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("parentId"),
        lambda e: e.update(id=""),
        lambda e: e.update(id=7),
        lambda e: e.update(id="x" * 201),
        lambda e: e.update(parentId=3),
        lambda e: e.update(timestamp="yesterday"),
        lambda e: e.update(timestamp="2026-01-01T00:00:00"),  # no offset
        lambda e: e.update(timestamp="2026-01-01T00:00:00.000Z" + " " * 60),
        lambda e: e.update(message=[]),
        lambda e: e["message"].update(role=None),
        lambda e: e["message"].update(role="r" * 65),
        lambda e: e["message"].pop("content"),
        lambda e: e["message"].update(content={"type": "text"}),
        lambda e: e["message"].update(timestamp=True),
        lambda e: e["message"].update(timestamp="1"),
        lambda e: e["message"].update(role="assistant", content="text, not blocks"),
        lambda e: e["message"].update(role="toolResult", content=None),
        lambda e: e["message"].update(role="custom", content=5),  # no rules for this role: valid
        lambda e: e.update(extra={"deep": [[[[1]]]]}),  # unknown fields: valid
    ],
)
def test_reading_judges_a_line_as_validate_entry_does(mutate):
    changed = entry("a1b2c3d4", None, timestamp=NEW_YEAR, text="hi")
    mutate(changed)
    item = read_one(json.dumps(changed).encode())
    expected = piformat.validate_entry(changed)
    if expected is None:
        assert isinstance(item, Line) and item.data == changed
    else:
        assert item == Problem(3, expected)
