"""Tamper evidence for entries: keyed hashes chained along the tree and over the seq order. Pure.

The key (settings.PIWEB_CHAIN_KEY) is passed in, so the module stays free of Django. HMAC-SHA256
is computed from pre-keyed inner and outer hashes (RFC 2104): per entry that costs two hash copies
instead of keying OpenSSL's HMAC afresh (store/rows.hash_rows does it for many rows at once).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=8)
def keyed(key: bytes) -> tuple[Any, Any]:
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in key))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in key))
    return inner, outer


def hmac_sha256_hex(key: bytes, *parts: bytes | memoryview) -> str:
    """hmac.new(key, b"".join(parts), "sha256").hexdigest()"""
    inner, outer = keyed(key)
    h = inner.copy()
    for part in parts:
        h.update(part)
    o = outer.copy()
    o.update(h.digest())
    return o.hexdigest()  # type: ignore[no-any-return]


def entry_chain_hash(key: bytes, parent_chain: str | None, seq: int, entry_id: str, raw: bytes | memoryview) -> str:
    """HMAC-SHA256 over the parent's chain hash, the entry's place and id, and its exact line
    (UTF-8). Rewriting, moving or inserting an entry breaks its hash (and, through the parent
    hash, those below it); without the key the database cannot forge new ones."""
    return hmac_sha256_hex(key, f"{parent_chain or ''}\n{seq}\n{entry_id}\n".encode(), raw)


def session_digest(key: bytes, previous: str, chain: str) -> str:
    """The session's running digest after one more entry (in seq order): catches removed rows,
    including the last one, which no chain hash points at."""
    return hmac_sha256_hex(key, f"{previous}:{chain}".encode())
