"""The flat tree's node list as JSON, served from cached chunks.

Entries are append-only, so the nodes of seqs a..b never change, only the labels shown on them.
The list is cached in chunks of CHUNK seqs, each keyed by the chain hash of its last entry (what
is stored there, not just where) and by the labels that fall in it: an append re-renders only the
last chunk, a label only the chunk of its target, and the rest of a 100k-entry tree comes from the
cache. A cold read (a new process) renders everything in one pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from django.core.cache import caches
from django.db import connection

from sessions_app.models import Session
from sessions_app.store.batches import select_in

CHUNK = 1024  # seqs per cached chunk: re-rendering one costs ~3 ms, reading 100 of them from the cache ~1 ms
CACHE_SECONDS = 3600

_ROWS = (
    "SELECT seq, entry_id, parent_id, type, role, timestamp FROM sessions_app_entry"
    " WHERE session_id = %s AND seq BETWEEN %s AND %s ORDER BY seq"
)


def tree_json(*, session: Session, labels: dict[str, str]) -> bytes:
    """{"leafId", "nodes"} with the nodes in file order, `labels` (target -> label) resolved on them.
    Joined once: a 100k-node tree is ~11 MB, and every extra copy of it costs milliseconds."""
    bodies = [body for body in _chunks(session, labels) if body]
    parts = [b'{"leafId":', orjson.dumps(session.leaf_id), b',"nodes":[']
    for body in bodies:
        parts += (body, b",")
    if bodies:
        parts.pop()
    parts.append(b"]}")
    return b"".join(parts)


def _chunks(session: Session, labels: dict[str, str]) -> list[bytes]:
    """Each chunk's nodes as JSON without the brackets, from the cache or rendered afresh."""
    last = session.last_seq or 0
    if last == 0:
        return []
    ends = [*range(CHUNK, last, CHUNK), last]
    chains = _lookup(session.pk, "seq", "chain_hash", ends)
    seqs = _lookup(session.pk, "entry_id", "seq", list(labels))
    chunk_labels: dict[int, dict[str, str]] = {}
    for target, label in labels.items():
        if target in seqs:
            chunk_labels.setdefault((seqs[target] - 1) // CHUNK, {})[target] = label
    keys = [_key(session, c, end, chains.get(end), chunk_labels.get(c)) for c, end in enumerate(ends)]
    store = caches["default"]
    bodies: dict[str, bytes] = store.get_many(keys)
    missing = [c for c, key in enumerate(keys) if key not in bodies]
    for first, stop in _runs(missing):
        rendered = render_chunks(session.pk, first * CHUNK + 1, min(stop * CHUNK, last), chunk_labels)
        fresh = {keys[c]: rendered.get(c, b"") for c in range(first, stop)}
        store.set_many(fresh, timeout=CACHE_SECONDS)
        bodies.update(fresh)
    return [bodies[key] for key in keys]


def _key(session: Session, chunk: int, end: int, chain: str | None, labels: dict[str, str] | None) -> str:
    # Entries stored before chain hashes existed have none: the session's creation time then tells
    # a reused primary key (a test database rolled back) from the session it once named.
    content = chain or f"t{session.created_at.timestamp()}"
    marks = hashlib.blake2b(orjson.dumps(sorted(labels.items())), digest_size=8).hexdigest() if labels else "-"
    return f"piweb:tree:{session.pk}:{chunk}:{end}:{content}:{marks}"


def _runs(chunks: Sequence[int]) -> Iterable[tuple[int, int]]:
    """Consecutive chunk numbers as half-open ranges: one query per run."""
    start = None
    for i, c in enumerate(chunks):
        if start is None:
            start = c
        if i + 1 == len(chunks) or chunks[i + 1] != c + 1:
            yield start, c + 1
            start = None


def render_chunks(session_pk: int, low: int, high: int, chunk_labels: dict[int, dict[str, str]]) -> dict[int, bytes]:
    """Node JSON (no brackets) of each chunk between seqs low..high, read from the database: what a
    cache miss costs (one query per run of missing chunks; tests count the calls)."""
    with connection.cursor() as cursor:
        # A plain cursor: for 100k entries the ORM's per-row work would dominate.
        cursor.execute(_ROWS, [session_pk, low, high])
        rows = cursor.fetchall()
    chunks: dict[int, list[dict[str, Any]]] = {}
    for seq, entry_id, parent_id, kind, role, timestamp in rows:
        chunk = (seq - 1) // CHUNK
        if chunk not in chunks:
            chunks[chunk], resolved = [], chunk_labels.get(chunk, {})
        chunks[chunk].append(node_dict(entry_id, parent_id, kind, role, resolved.get(entry_id), timestamp))
    return {chunk: orjson.dumps(nodes)[1:-1] for chunk, nodes in chunks.items()}


def node_dict(
    entry_id: str, parent_id: str | None, kind: str, role: str | None, label: str | None, timestamp: str
) -> dict[str, Any]:
    """One node of GET /tree (and of anything else that lists nodes: GET /compare's sides)."""
    node: dict[str, Any] = {"id": entry_id, "parentId": parent_id, "type": kind}
    if role is not None:
        node["role"] = role
    if label is not None:
        node["label"] = label
    node["timestamp"] = timestamp
    return node


def _lookup(session_pk: int, key: str, value: str, wanted: list[Any]) -> dict[Any, Any]:
    """{key: value} of this session's entries whose `key` column is in `wanted`."""
    sql = f"SELECT {key}, {value} FROM sessions_app_entry WHERE session_id = %s AND {key} IN ({{marks}})"
    return dict(select_in(sql, [session_pk], wanted))
