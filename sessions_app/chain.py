"""Tamper evidence for entries: keyed hashes chained along the tree and over the seq order. Pure.

The key (settings.PIWEB_CHAIN_KEY) is passed in, so the import worker computes the same hashes
outside Django. One-shot hmac.digest: ~3x cheaper per entry than HMAC objects.
"""

from __future__ import annotations

import hmac


def entry_chain_hash(key: bytes, parent_chain: str | None, seq: int, entry_id: str, raw: bytes) -> str:
    """HMAC-SHA256 over the parent's chain hash, the entry's place and id, and its exact line
    (UTF-8). Rewriting, moving or inserting an entry breaks its hash (and, through the parent
    hash, those below it); without the key the database cannot forge new ones."""
    head = f"{parent_chain or ''}\n{seq}\n{entry_id}\n".encode()
    return hmac.digest(key, head + raw, "sha256").hex()


def session_digest(key: bytes, previous: str, chain: str) -> str:
    """The session's running digest after one more entry (in seq order): catches removed rows,
    including the last one, which no chain hash points at."""
    return hmac.digest(key, f"{previous}:{chain}".encode(), "sha256").hex()
