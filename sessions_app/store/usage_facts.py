"""A session's usage facts (core/usage_tree.UsageChunk), cached per chunk of seqs as the tree's
nodes are (store/tree_nodes.py): entries never change, so a chunk keyed by the chain hash of its
last entry stays valid; an append re-reads only the last chunk. Only assistant lines are parsed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import caches
from django.db import DatabaseError, connection

from sessions_app.core import jsjson
from sessions_app.core.usage import Usage
from sessions_app.core.usage_tree import (
    SessionUsage,
    UsageChunk,
    cost_by_day,
    path_replies,
    reply_authors,
    session_usage,
    usage_by,
)
from sessions_app.models import Session, StreamingTurn
from sessions_app.store.batches import select_in
from sessions_app.store.tree_nodes import CACHE_SECONDS, CHUNK, _lookup, _runs

FORMAT = 4  # of the cached UsageChunk: a new one is not read from an older one's keys
_ROWS = (
    "SELECT seq, entry_id, parent_id, type, ts_ms, author_id,"
    " CASE WHEN type = 'message' AND role = 'assistant' THEN {message} END"
    " FROM sessions_app_entry WHERE session_id = %s AND seq BETWEEN %s AND %s ORDER BY seq"
)
# What of an assistant line Python reads. SQLite picks the four fields out in one parse (numbers
# kept as written): decoding whole replies, their content included, was most of a cold read.
# PostgreSQL's json operators would parse the line once per field, so there it is the line.
_PICKED = ("usage", "provider", "model", "timestamp")
_MESSAGE = {
    "sqlite": "json_extract(raw, " + ", ".join(f"'$.message.{name}'" for name in _PICKED) + ")",
    "postgresql": "raw",
}


def usage(*, session: Session) -> SessionUsage:
    return session_usage(chunks(session), session.leaf_id)


def chunks(session: Session) -> list[UsageChunk]:
    """The session's facts in file order, from the cache or read afresh (one query per run of
    missing chunks)."""
    last = session.last_seq or 0
    if last == 0:
        return []
    ends = [*range(CHUNK, last, CHUNK), last]
    chains = _lookup(session.pk, "seq", "chain_hash", ends)
    keys = [_key(session, c, end, chains.get(end)) for c, end in enumerate(ends)]
    store = caches["default"]
    found: dict[str, UsageChunk] = store.get_many(keys)
    missing = [c for c, key in enumerate(keys) if key not in found]
    for first, stop in _runs(missing):
        read = read_chunks(session.pk, first * CHUNK + 1, min(stop * CHUNK, last))
        fresh = {keys[c]: read.get(c, UsageChunk(first=c * CHUNK)) for c in range(first, stop)}
        store.set_many(fresh, timeout=CACHE_SECONDS)
        found.update(fresh)
    return [found[key] for key in keys]


def _key(session: Session, chunk: int, end: int, chain: str | None) -> str:
    # As tree_nodes._key: without chain hashes, the creation time tells a reused primary key apart.
    content = chain or f"t{session.created_at.timestamp()}"
    return f"piweb:usage{FORMAT}:{session.pk}:{chunk}:{end}:{content}"


def read_chunks(session_pk: int, low: int, high: int) -> dict[int, UsageChunk]:
    """The facts of each chunk between seqs low..high, read from the database (what a miss costs)."""
    picked = connection.vendor == "sqlite"
    try:
        rows = _fetch(_MESSAGE[connection.vendor], session_pk, low, high)
    except DatabaseError:
        # A line SQLite's JSON reader refuses (nested deeper than it goes, when the import's
        # limit allows more) is read whole, as PostgreSQL reads every line.
        if not picked:
            raise
        picked, rows = False, _fetch("raw", session_pk, low, high)
    seqs = {row[1]: row[0] for row in rows}
    # Parents before `low` (a branch that goes back further, or the entry before the first chunk).
    earlier = {row[2] for row in rows if row[2] is not None and row[2] not in seqs}
    seqs.update(_lookup(session_pk, "entry_id", "seq", list(earlier)))
    read: dict[int, UsageChunk] = {}
    for seq, entry_id, parent_id, kind, ts_ms, author, raw in rows:
        c = (seq - 1) // CHUNK
        chunk = read.get(c)
        if chunk is None:
            chunk = read[c] = UsageChunk(first=c * CHUNK)
        message = None
        if raw is not None:
            data: Any = jsjson.loads(raw)
            if picked:
                message = {"role": "assistant", **dict(zip(_PICKED, data, strict=True))}
            else:
                found = data.get("message") if isinstance(data, dict) else None
                message = found if isinstance(found, dict) else None
        parent_seq = seqs.get(parent_id, 0) if parent_id is not None else 0
        chunk.add(entry_id, parent_seq - 1, kind == "message", message, ts_ms, author)
    return read


def _fetch(message: str, session_pk: int, low: int, high: int) -> list[Any]:
    with connection.cursor() as cursor:
        cursor.execute(_ROWS.format(message=message), [session_pk, low, high])
        return list(cursor.fetchall())


def turn_authors(*, session: Session) -> dict[str, int]:
    """{assistant entry id: the user whose chat turn wrote it} for the replies made in piweb (the
    reply's entry has no author of its own: the turn that streamed it has)."""
    turns = StreamingTurn.objects.filter(session=session, entry_id__isnull=False, author__isnull=False)
    return {str(entry_id): author for entry_id, author in turns.values_list("entry_id", "author_id")}


@dataclass(frozen=True, slots=True)
class UsagePage:
    """What the session's usage page shows."""

    usage: SessionUsage
    previews: dict[str, str]  # leaf id -> its row text
    by_user: list[tuple[str, Usage]]  # (username, what their piweb chat turns cost), most first
    context: list[tuple[str, Usage]]  # the assistant messages on the current path, root first


def usage_page(*, session: Session) -> UsagePage:
    found = chunks(session)
    summed = session_usage(found, session.leaf_id)
    leaves = [b.leaf_id for b in summed.branches]
    sql = "SELECT entry_id, preview FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({marks})"
    previews = dict(select_in(sql, [session.pk], leaves))
    # An assistant message appended in piweb names its author; one a chat turn streamed, the turn's.
    authors = reply_authors(found, session.mirror_seqs or ())
    per_user = usage_by(found, {**authors, **turn_authors(session=session)})
    names = dict(User.objects.filter(pk__in=list(per_user)).values_list("pk", "username"))
    by_user = sorted(((names.get(pk, "?"), u) for pk, u in per_user.items()), key=lambda p: -p[1].cost)
    return UsagePage(summed, previews, by_user, path_replies(found, session.leaf_id))


def team_cost_by_day(*, sessions: list[Session]) -> dict[int, float]:
    """Cost per UTC day (days since the epoch) of the assistant messages of these sessions."""
    days: dict[int, float] = {}
    for session in sessions:
        for day, cost in cost_by_day(chunks(session)).items():
            days[day] = days.get(day, 0.0) + cost
    return days
