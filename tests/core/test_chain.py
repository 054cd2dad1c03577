"""chain.py's HMAC shortcut against the standard library's HMAC."""

from __future__ import annotations

import hmac

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.core import chain


@given(key=st.binary(max_size=200), parts=st.lists(st.binary(max_size=300), max_size=4))
def test_it_is_hmac_sha256(key, parts):
    assert chain.hmac_sha256_hex(key, *parts) == hmac.new(key, b"".join(parts), "sha256").hexdigest()


def test_entry_hash_covers_parent_place_id_and_line():
    base = chain.entry_chain_hash(b"k", "p", 1, "a", b"{}")
    assert base == hmac.new(b"k", b"p\n1\na\n{}", "sha256").hexdigest()
    variants = {
        chain.entry_chain_hash(b"k", None, 1, "a", b"{}"),
        chain.entry_chain_hash(b"k", "p", 2, "a", b"{}"),
        chain.entry_chain_hash(b"k", "p", 1, "b", b"{}"),
        chain.entry_chain_hash(b"k", "p", 1, "a", b"{ }"),
        chain.entry_chain_hash(b"j", "p", 1, "a", b"{}"),
    }
    assert base not in variants and len(variants) == 5


@given(
    key=st.binary(max_size=100),
    lines=st.lists(st.binary(max_size=200), min_size=1, max_size=8),
    parents=st.lists(st.integers(min_value=-1, max_value=8), min_size=8, max_size=8),
)
def test_hash_rows_is_entry_chain_hash_and_session_digest_row_after_row(key, lines, parents):
    from sessions_app.store.entry_insert import COLUMNS

    stored = {"old": chain.entry_chain_hash(key, None, 1, "old", b"{}")}  # an entry of an earlier batch
    ids = [f"e{i}" for i in range(len(lines))]
    rows, expected, digest, known = [], [], "before", dict(stored)
    for i, line in enumerate(lines):
        # A parent before this entry: none (root), the stored one, or an earlier row of the batch.
        parent = None if parents[i] == -1 else "old" if parents[i] >= i else ids[parents[i]]
        row: list[object] = [None] * len(COLUMNS)
        row[COLUMNS.index("seq")], row[COLUMNS.index("entry_id")] = i + 2, ids[i]
        row[COLUMNS.index("parent_id")], row[COLUMNS.index("raw")] = parent, memoryview(line)
        rows.append(row)
        known[ids[i]] = chain.entry_chain_hash(key, known[parent] if parent else None, i + 2, ids[i], line)
        digest = chain.session_digest(key, digest, known[ids[i]])
        expected.append(known[ids[i]])
    chains = dict(stored)
    assert chain.hash_rows(key, rows, chains, "before") == digest
    assert [row[COLUMNS.index("chain_hash")] for row in rows] == expected
    assert chains == known
