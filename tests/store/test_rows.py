"""store.rows: many rows in multi-row statements (SQLite), the same rows as one per statement."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from sessions_app.core import chain
from sessions_app.models import Entry
from sessions_app.store import rows as entry_rows
from sessions_app.store import services

pytestmark = pytest.mark.django_db


def _rows(session_pk: int, n: int, *, author: int, first: int = 1) -> list[list[Any]]:
    created = connection.ops.adapt_datetimefield_value(timezone.now())
    made = []
    for seq in range(first, first + n):
        parent = f"{seq - 1:08x}" if seq > 1 else None
        raw = f'{{"type":"custom","id":"{seq:08x}","parentId":{"null" if parent is None else f"{parent!r}"}}}'
        made.append(
            [
                session_pk, seq, f"{seq:08x}", parent, "custom", None, "2026-01-01T00:00:00.000Z", seq, raw,
                f"row {seq}", seq - 1, '"off"', None, None, None, author, created, f"{seq:064x}",
            ]
        )  # fmt: skip
    return made


def _stored(session_pk: int) -> list[tuple[Any, ...]]:
    columns = [c for c in entry_rows.COLUMNS if c != "created_at"]
    return list(Entry.objects.filter(session_id=session_pk).order_by("seq").values_list(*columns))


@pytest.mark.parametrize("n", [1, entry_rows.ROWS_PER_STATEMENT - 1, entry_rows.ROWS_PER_STATEMENT, 95])
def test_it_stores_every_row_in_order_as_single_row_statements_would(alice, n):
    one = services.session_create(owner=alice)
    many = services.session_create(owner=alice)
    with connection.cursor() as cursor:
        for row in _rows(one.pk, n, author=alice.pk):
            cursor.execute(entry_rows.statement(1, vendor=connection.vendor), row)
        entry_rows.insert_rows(cursor, _rows(many.pk, n, author=alice.pk), vendor=connection.vendor)
    expected = [(many.pk, *row[1:]) for row in _stored(one.pk)]
    assert len(expected) == n
    assert _stored(many.pk) == expected


def test_rows_with_the_line_as_utf8_bytes_are_stored_as_text(alice):
    session = services.session_create(owner=alice)
    rows = _rows(session.pk, 45, author=alice.pk)
    text = "é ✓ 😀"
    lines = [f'{row[8][:-1]},"t":"{text}"}}'.encode() for row in rows]
    ends = [sum(len(line) for line in lines[: i + 1]) for i in range(len(lines))]
    offsets = [(end - len(line), end) for line, end in zip(lines, ends, strict=True)]
    view = memoryview(b"".join(lines))
    for row, (start, end) in zip(rows, offsets, strict=True):
        row[8] = view[start:end]
    with connection.cursor() as cursor:
        entry_rows.insert_rows(cursor, rows, vendor=connection.vendor, raw_bytes=True)
    raws = list(Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True))
    assert raws == [bytes(view[s:e]).decode() for s, e in offsets]
    assert all(raw.endswith(f'"t":"{text}"}}') for raw in raws)


def test_a_row_that_breaks_a_constraint_leaves_none_of_its_statements_rows(alice):
    """OR FAIL keeps the rows before the failing one until the transaction rolls back; the
    caller's atomic block must take them all back."""
    session = services.session_create(owner=alice)
    rows = _rows(session.pk, 60, author=alice.pk)
    rows[30][2] = rows[10][2]  # a repeated entry id, in the first multi-row statement
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        entry_rows.insert_rows(cursor, rows, vendor=connection.vendor)
    assert not Entry.objects.filter(session=session).exists()
    # The connection is usable and the session takes the same rows once they are valid.
    rows[30][2] = "0000ffff"
    with transaction.atomic(), connection.cursor() as cursor:
        entry_rows.insert_rows(cursor, rows, vendor=connection.vendor)
    assert [r[1] for r in _stored(session.pk)] == list(range(1, 61))


def test_sqlite_statements_of_many_rows_do_not_keep_a_statement_journal():
    """OR FAIL (see store/rows.py): without it SQLite journals every page a multi-row INSERT touches."""
    assert entry_rows.statement(40, vendor="sqlite").startswith("INSERT OR FAIL INTO sessions_app_entry ")
    assert entry_rows.statement(1, vendor="sqlite").startswith("INSERT INTO ")
    assert entry_rows.statement(3, vendor="postgresql").startswith("INSERT INTO ")


def test_none_bytes_and_views_are_bound_unchanged(alice):
    """NULL stays NULL, bytes and memoryviews are bound as blobs; piweb registers no sqlite3
    adapter (bench_side_effects: pass-through ones bought 0.6% of a large import)."""
    params: list[Any] = [None, b"\x00\xffab", memoryview(b"xyz")[1:]]
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s IS NULL, %s, %s", params)
        is_null, blob, view = cursor.fetchone()
    assert is_null in (True, 1)
    assert bytes(blob) == b"\x00\xffab"
    assert bytes(view) == b"yz"
    if connection.vendor == "sqlite":
        for kind in (type(None), bytes, memoryview):
            assert (kind, sqlite3.PrepareProtocol) not in sqlite3.adapters


@given(
    key=st.binary(max_size=100),
    lines=st.lists(st.binary(max_size=200), min_size=1, max_size=8),
    parents=st.lists(st.integers(min_value=-1, max_value=8), min_size=8, max_size=8),
)
def test_hash_rows_is_entry_chain_hash_and_session_digest_row_after_row(key, lines, parents):
    stored = {"old": chain.entry_chain_hash(key, None, 1, "old", b"{}")}  # an entry of an earlier batch
    ids = [f"e{i}" for i in range(len(lines))]
    rows, expected, digest, known = [], [], "before", dict(stored)
    for i, line in enumerate(lines):
        # A parent before this entry: none (root), the stored one, or an earlier row of the batch.
        parent = None if parents[i] == -1 else "old" if parents[i] >= i else ids[parents[i]]
        row: list[object] = [None] * len(entry_rows.COLUMNS)
        row[entry_rows.COLUMNS.index("seq")], row[entry_rows.COLUMNS.index("entry_id")] = i + 2, ids[i]
        row[entry_rows.COLUMNS.index("parent_id")], row[entry_rows.COLUMNS.index("raw")] = parent, memoryview(line)
        rows.append(row)
        known[ids[i]] = chain.entry_chain_hash(key, known[parent] if parent else None, i + 2, ids[i], line)
        digest = chain.session_digest(key, digest, known[ids[i]])
        expected.append(known[ids[i]])
    chains = dict(stored)
    assert entry_rows.hash_rows(key, rows, chains, "before") == digest
    assert [row[entry_rows.COLUMNS.index("chain_hash")] for row in rows] == expected
    assert chains == known


def test_hash_rows_waits_for_a_parent_that_comes_later():
    """A file with children before their parents: the chain still runs parent to child, and the
    digest still follows the rows' (seq) order."""
    key = b"k"
    lines = [b'{"c":1}', b'{"b":1}', b'{"a":1}']
    ids, parents = ["c", "b", "a"], ["b", "a", None]
    rows = []
    for i in range(3):
        row: list[object] = [None] * len(entry_rows.COLUMNS)
        row[entry_rows.COLUMNS.index("seq")], row[entry_rows.COLUMNS.index("entry_id")] = i + 1, ids[i]
        row[entry_rows.COLUMNS.index("parent_id")], row[entry_rows.COLUMNS.index("raw")] = parents[i], lines[i]
        rows.append(row)
    a = chain.entry_chain_hash(key, None, 3, "a", lines[2])
    b = chain.entry_chain_hash(key, a, 2, "b", lines[1])
    c = chain.entry_chain_hash(key, b, 1, "c", lines[0])
    digest = chain.session_digest(key, chain.session_digest(key, chain.session_digest(key, "", c), b), a)
    assert entry_rows.hash_rows(key, rows, {}, "") == digest
    assert [row[entry_rows.COLUMNS.index("chain_hash")] for row in rows] == [c, b, a]
