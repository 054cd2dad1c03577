"""Channel-layer events: what a session's viewers are told, typed, published after commit.

Every event goes to the session's group (:func:`group_name`, built from the integer key because pi
session ids may hold characters group names refuse). Types start with ``session.`` so the
consumer's handlers are ``session_<name>`` and cannot clash with ``websocket.*``. Only plain JSON
values travel (channels-redis serializes them with msgpack).

Ordering and replay (STYLE 3.6): ``session.entry`` carries the session's ``seq`` (``last_seq``
after the append); ``session.turn_start``/``session.delta`` carry a per-turn ``index`` (0 for the
start, then 1, 2, ...). A consumer drops what its snapshot already covered.

Streamed output is rendered once, by the turn runner: ``session.turn_start``, ``session.delta`` and
``session.presence`` carry the ready websocket frame (``html``), so a consumer only forwards a
string. Events travel through fanout.py: to each server process once, then to its sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal, NotRequired, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from sessions_app import fanout
from sessions_app.models import Session

log = logging.getLogger(__name__)

TURN_CHANNEL = "piweb-turns"  # the worker channel turns are sent to when the layer is Redis


class EntryEvent(TypedDict):
    """An entry was appended (message, label, compaction, branch summary, model change, ...)."""

    type: Literal["session.entry"]
    session: str
    seq: int
    entry_id: str
    parent_id: str | None
    entry_type: str
    leaf_id: str | None  # the session's leaf after the append
    prev_leaf_id: str | None  # and before it: parent_id == prev_leaf_id means a plain append at the leaf
    raw: str  # the entry's JSON line
    message_count: NotRequired[int]  # the session's after the append (the page header shows it)


class LeafEvent(TypedDict):
    """The leaf moved without an append (continue from a node, regenerate, navigation)."""

    type: Literal["session.leaf"]
    session: str
    seq: int
    leaf_id: str | None


class ChangedEvent(TypedDict):
    """Anything else that changes what viewers see (an import appended lines, deletion, ...)."""

    type: Literal["session.changed"]
    session: str
    seq: int
    leaf_id: str | None
    reason: str


class TurnStartEvent(TypedDict):
    type: Literal["session.turn_start"]
    session: str
    turn: str  # StreamingTurn.public_id
    index: Literal[0]
    parent_id: str | None
    model: str
    html: str  # the frame (chat_frames.turn_start), rendered once by the runner


class DeltaPart(TypedDict):
    block: int  # position in the assistant message's content array
    kind: str  # text, thinking, toolCall
    text: str  # text to append (for a toolCall: argument JSON)
    new: bool  # first part of this block: the block element must be created
    name: str  # tool name (toolCall blocks), else ""


class DeltaEvent(TypedDict):
    """Coalesced stream output; ``index`` grows by one per event within a turn."""

    type: Literal["session.delta"]
    session: str
    turn: str
    index: int
    html: str  # the frame (chat_frames.delta of the parts), rendered once by the runner
    t: float  # wall time the oldest token in it was produced (latency measurements)


class StreamEndEvent(TypedDict):
    type: Literal["session.stream_end"]
    session: str
    turn: str
    status: Literal["done", "error", "aborted"]
    entry_id: str | None


class PresenceEvent(TypedDict):
    type: Literal["session.presence"]
    session: str
    viewers: list[str]  # usernames, sorted, each once
    html: str  # the frame (chat_frames.presence), rendered once by the sender


class ReviewEvent(TypedDict):
    """A comment thread or verdict on an entry changed (store/reviews.py): viewers redraw that
    entry's threads. Carries no text: each socket renders them for its own user's role."""

    type: Literal["session.review"]
    session: str
    entry_id: str
    what: str  # comment, reply, edit, resolve, reopen, delete, verdict


Event = (
    EntryEvent | LeafEvent | ChangedEvent | TurnStartEvent | DeltaEvent | StreamEndEvent | PresenceEvent | ReviewEvent
)


def group_name(session_pk: int) -> str:
    """ASCII-only and short, whatever the session's public id holds."""
    return f"session.{session_pk}"


async def publish_now(
    session_pk: int, event: TurnStartEvent | DeltaEvent | PresenceEvent, *, remember: fanout.Remember | None = None
) -> None:
    """Send an event at once (not part of any transaction): streamed output, presence."""
    await fanout.publish(group_name(session_pk), dict(event), remember=remember)


def publish_sync(session_pk: int, event: Event) -> None:
    fanout.publish_sync(group_name(session_pk), dict(event))


def publish_on_commit(session: Session, event: Event) -> None:
    """Publish once the surrounding transaction commits (at once outside one); never on rollback."""
    pk = session.pk
    transaction.on_commit(lambda: publish_sync(pk, event))


# --- builders used by services -------------------------------------------------------------


def entry_event(
    session: Session, *, entry_id: str, parent_id: str | None, entry_type: str, raw: str, prev_leaf_id: str | None
) -> EntryEvent:
    return {
        "type": "session.entry",
        "session": session.public_id,
        "seq": session.last_seq,
        "entry_id": entry_id,
        "parent_id": parent_id,
        "entry_type": entry_type,
        "leaf_id": session.leaf_id,
        "prev_leaf_id": prev_leaf_id,
        "raw": raw,
        "message_count": session.message_count,
    }


def leaf_event(session: Session) -> LeafEvent:
    return {"type": "session.leaf", "session": session.public_id, "seq": session.last_seq, "leaf_id": session.leaf_id}


def changed_event(session: Session, reason: str) -> ChangedEvent:
    return {
        "type": "session.changed",
        "session": session.public_id,
        "seq": session.last_seq,
        "leaf_id": session.leaf_id,
        "reason": reason,
    }


def review_event(session: Session, *, entry_id: str, what: str) -> ReviewEvent:
    return {"type": "session.review", "session": session.public_id, "entry_id": entry_id, "what": what}


# --- a user's inbox (review requests for them) -------------------------------------------------


def inbox_group(user_id: int) -> str:
    return f"inbox.{user_id}"


def _inbox_send(user_ids: list[int]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for user_id in user_ids:
        try:
            async_to_sync(layer.group_send)(inbox_group(user_id), {"type": "inbox.changed"})
        except Exception:  # the write has committed; a lost notice only leaves a badge stale
            log.exception("publishing inbox.changed to user %s failed", user_id)


def inbox_changed_on_commit(user_ids: Iterable[int]) -> None:
    """After commit: these users' inbox sockets recount (live/consumers.InboxConsumer). The event
    carries nothing: each socket counts what its own user may see."""
    ids = sorted(set(user_ids))
    if ids:
        transaction.on_commit(lambda: _inbox_send(ids))
