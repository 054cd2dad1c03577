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
