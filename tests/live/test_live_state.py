"""The streaming fast path: live state for snapshots and recovery, background saves, the hub."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from sessions_app import events, fanout
from sessions_app.core import jsjson
from sessions_app.live import streaming
from sessions_app.live.consumers import SessionConsumer
from sessions_app.models import Entry, StreamingTurn
from sessions_app.render import frames
from tests.builders import demo_message
from tests.live.sockets import connect, delta_text, frames_until, snapshot_text, wait_turns_done

pytestmark = [pytest.mark.django_db(transaction=True)]


def streaming_row(session, *, runner: str, text: str, index: int) -> StreamingTurn:
    return StreamingTurn.objects.create(
        public_id=uuid.uuid4(),
        session=session,
        parent_id=session.leaf_id,
        status="streaming",
        model={"api": "demo", "provider": "piweb", "id": "piweb-demo"},
        partial=demo_message(text),
        last_index=index,
        runner=runner,
        heartbeat_at=timezone.now(),
    )


def delta_event(session, turn: str, index: int, text: str) -> events.DeltaEvent:
    parts: list[events.DeltaPart] = [{"block": 0, "kind": "text", "text": text, "new": False, "name": ""}]
    return {
        "type": "session.delta",
        "session": session.public_id,
        "turn": turn,
        "index": index,
        "html": frames.delta(turn=turn, index=index, t=time.time(), parts=parts),
        "t": time.time(),
    }


@pytest.mark.asyncio
async def test_snapshot_prefers_the_live_state_over_the_lagging_row(chat_session, alice, turn_worker):
    """The row was saved at index 1; deltas 2 and 3 went out since. A viewer connecting now gets the
    text up to 3 in its snapshot and only deltas after 3 from the stream."""
    row = await sync_to_async(streaming_row)(chat_session, runner=streaming.RUNNER_ID, text="Hel", index=1)
    turn = str(row.public_id)
    streaming._local_aborts[turn] = asyncio.Event()  # running in this process: not stale
    await streaming.live_publish(chat_session.pk, delta_event(chat_session, turn, 3, " wor"), demo_message("Hello wor"))
    try:
        comm = await connect(alice, chat_session)
        frames = await frames_until(comm, "chat-presence")
        assert snapshot_text(frames[0], turn) == "Hello wor"
        for index, text in ((2, "lo"), (3, " wor"), (4, "ld")):  # 2 and 3 are in the snapshot already
            await events.publish_now(chat_session.pk, delta_event(chat_session, turn, index, text))
        got = await frames_until(comm, 'data-index="4"')
        assert delta_text(got, turn) == "ld"
        await comm.disconnect()
    finally:
        streaming._local_aborts.pop(turn, None)
        streaming._live.pop(turn, None)


@pytest.mark.asyncio
async def test_partial_is_saved_to_the_row_while_streaming_and_throttled(
    settings, chat_session, alice_async, turn_worker, monkeypatch
):
    settings.PIWEB_DEMO_DELAY = "0.01"
    settings.PIWEB_STREAM_INTERVAL_MS = 0  # one delta per word
    settings.PIWEB_STREAM_SAVE_MS = 100
    saves: list[tuple[float, int]] = []
    real = streaming.partial_save

    def recording(turn_pk: int, message: dict[str, Any], index: int) -> None:
        saves.append((time.monotonic(), index))
        real(turn_pk, message, index)

    monkeypatch.setattr(streaming, "partial_save", recording)
    await alice_async.post(f"/sessions/{chat_session.public_id}/chat/send/", {"text": "save me " * 10})
    seen = None
    for _ in range(300):  # the row fills up while the turn is still streaming
        row = await StreamingTurn.objects.filter(session=chat_session).afirst()
        if row is not None and row.status == "streaming" and row.last_index > 0 and row.partial:
            seen = row
            break
        await asyncio.sleep(0.01)
    assert seen is not None and seen.partial is not None and seen.partial["content"][0]["text"]
    await wait_turns_done(chat_session)
    final = await StreamingTurn.objects.aget(session=chat_session)
    assert final.last_index > len(saves) >= 2  # fewer writes than deltas
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(saves)]
    assert min(gaps) >= 0.09  # at most one write per PIWEB_STREAM_SAVE_MS
    assert [i for _, i in saves] == sorted({i for _, i in saves})  # always the newest, in order


@pytest.mark.asyncio
async def test_strict_mode_saves_before_every_delta(settings, chat_session, alice_async, turn_worker, monkeypatch):
    settings.PIWEB_STREAM_SAVE_MS = 0
    settings.PIWEB_STREAM_INTERVAL_MS = 0
    indexes: list[int] = []
    real = streaming.partial_save

    def recording(turn_pk: int, message: dict[str, Any], index: int) -> None:
        indexes.append(index)
        real(turn_pk, message, index)

    monkeypatch.setattr(streaming, "partial_save", recording)
    await alice_async.post(f"/sessions/{chat_session.public_id}/chat/send/", {"text": "strict"})
    await wait_turns_done(chat_session)
    final = await StreamingTurn.objects.aget(session=chat_session)
    assert indexes == list(range(1, final.last_index + 1))


def test_recovery_uses_the_live_state_a_dead_runner_left(chat_session):
    """The row lags the published output; recovery stores what viewers were shown (the live state:
    Redis when the layer is shared, else this process's memory)."""
    row = streaming_row(chat_session, runner=f"{streaming.HOST}:999999:dead", text="Hel", index=1)
    turn = str(row.public_id)
    if streaming.uses_worker():
        import redis
        from django.conf import settings

        with redis.Redis.from_url(settings.REDIS_URL) as client:
            client.set(streaming._live_key(turn), orjson.dumps([4, demo_message("Hello world")]), ex=60)
    else:
        streaming._live[turn] = (4, demo_message("Hello world"))
    try:
        assert streaming.recover_stale_turns(session=chat_session) == [turn]
    finally:
        streaming._live.pop(turn, None)
    reply = Entry.objects.get(session=chat_session, role="assistant")
    msg = jsjson.loads(reply.raw)["message"]
    assert msg["content"][0]["text"] == "Hello world" and msg["stopReason"] == "error"


@pytest.mark.asyncio
async def test_hub_buffers_during_the_snapshot_and_forgets_closed_sockets(chat_session, alice, turn_worker):
    """On either layer: events reach a consumer through its process's hub (fanout.py)."""
    group = events.group_name(chat_session.pk)
    comm = await connect(alice, chat_session)
    await frames_until(comm, "chat-presence")
    [listener] = fanout.hub.groups[group].values()
    assert isinstance(listener, SessionConsumer)
    consumer = listener
    turn = str(uuid.uuid4())
    consumer.ready = False  # as while its snapshot is being built
    consumer.turn_index[turn] = 1
    await events.publish_now(chat_session.pk, delta_event(chat_session, turn, 1, "old"))
    await events.publish_now(chat_session.pk, delta_event(chat_session, turn, 2, "new"))
    for _ in range(100):  # (through Redis, they arrive a moment later)
        if len([e for e in consumer.pending if e["type"] == "session.delta"]) == 2:
            break
        await asyncio.sleep(0.02)
    assert [e["index"] for e in consumer.pending if e["type"] == "session.delta"] == [1, 2]
    while consumer.pending:  # what connect() does once the snapshot went out
        await consumer._forward(consumer.pending.pop(0))
    consumer.ready = True
    got = await frames_until(comm, 'data-index="2"')
    assert delta_text(got, turn) == "new"
    await comm.disconnect()
    assert group not in fanout.hub.groups
