"""Turns end to end: POST commands -> runner -> websocket frames -> the assistant entry in pi's shape."""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async

from sessions_app.llm.demo import demo_reply
from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services
from tests.builders import stored_message
from tests.live.sockets import (
    connect,
    delta_text,
    frames_until,
    snapshot_text,
    turn_ids,
    wait_turns_done,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def url(session, command: str) -> str:
    return f"/sessions/{session.public_id}/chat/{command}/"


async def assistants(session) -> list[Entry]:
    return [e async for e in Entry.objects.filter(session=session, role="assistant").order_by("seq")]


async def test_send_streams_to_viewer_and_saves_pi_message(chat_session, alice, alice_async, turn_worker):
    comm = await connect(alice, chat_session)
    try:
        await frames_until(comm, "chat-presence")
        text = "Hello <script>alert(1)</script> & bye"
        response = await alice_async.post(url(chat_session, "send"), {"text": text, "parent": chat_session.leaf_id})
        assert response.status_code == 200 and 'id="chat-composer"' in response.content.decode()
        frames = await frames_until(comm, r'id="turn-[^"]+" data-gone></div></div>$')
        [turn] = set(turn_ids(frames))
        await wait_turns_done(chat_session)
        [reply] = await assistants(chat_session)
        msg = stored_message(reply)
        assert list(msg) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]
        assert (msg["api"], msg["provider"], msg["model"], msg["stopReason"]) == ("demo", "piweb", "piweb-demo", "stop")
        assert set(msg["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
        assert set(msg["usage"]["cost"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
        assert msg["usage"]["output"] > 0 and isinstance(msg["timestamp"], int)
        streamed = delta_text(frames, turn)
        assert streamed == msg["content"][0]["text"] == demo_reply([{"role": "user", "content": text}])
        joined = "".join(frames)
        assert "<script>" not in joined and "&lt;script&gt;" in joined
        # Indexes are 1, 2, 3, ... in order; the entry frame comes before the bubble is removed.
        tail = "".join(frames[-3:])
        assert f'id="chat-e-{reply.entry_id}"' in tail
        row = await StreamingTurn.objects.aget(public_id=turn)
        assert row.status == "done" and row.entry_id == reply.entry_id and row.last_index >= 1
        await chat_session.arefresh_from_db()
        assert chat_session.leaf_id == reply.entry_id
    finally:
        await comm.disconnect()


async def test_reconnecting_viewer_gets_every_delta_exactly_once(
    settings, chat_session, alice, alice_async, turn_worker
):
    settings.PIWEB_DEMO_DELAY = "0.02"
    first = await connect(alice, chat_session)
    await frames_until(first, "chat-presence")
    await alice_async.post(url(chat_session, "send"), {"text": "tell me something " * 3})
    early = await frames_until(first, r"beforeend:#turn-[^\"]+-b0")
    [turn] = set(turn_ids(early))
    await first.disconnect()  # the browser goes away mid-stream; the turn goes on
    await asyncio.sleep(0.15)
    second = await connect(alice, chat_session)
    frames = await frames_until(second, rf'id="turn-{turn}" data-gone')
    snap = frames[0]
    before = snapshot_text(snap, turn)
    assert before, "the snapshot holds the text so far"
    after = delta_text(frames[1:], turn)
    await wait_turns_done(chat_session)
    [reply] = await assistants(chat_session)
    assert before + after == stored_message(reply)["content"][0]["text"]
    indexes = [int(m.group(1)) for f in frames if (m := re.search(r'data-index="(\d+)"', f))]
    assert indexes == sorted(set(indexes)) and len(indexes) >= 2
    await second.disconnect()


async def test_disconnect_mid_stream_still_saves(settings, chat_session, alice, alice_async, turn_worker):
    settings.PIWEB_DEMO_DELAY = "0.01"
    comm = await connect(alice, chat_session)
    await frames_until(comm, "chat-presence")
    await alice_async.post(url(chat_session, "send"), {"text": "go on"})
    await frames_until(comm, r"beforeend:#turn-")
    await comm.disconnect()
    await wait_turns_done(chat_session)
    [reply] = await assistants(chat_session)
    assert stored_message(reply)["stopReason"] == "stop"
    assert stored_message(reply)["content"][0]["text"] == demo_reply([{"role": "user", "content": "go on"}])


async def test_stop_ends_stream_within_a_second_and_keeps_partial(
    settings, chat_session, alice, alice_async, turn_worker
):
    settings.PIWEB_DEMO_DELAY = "0.3"  # ~40 words: 12 s if not stopped
    comm = await connect(alice, chat_session)
    await frames_until(comm, "chat-presence")
    await alice_async.post(url(chat_session, "send"), {"text": "long one"})
    frames = await frames_until(comm, r"beforeend:#turn-[^\"]+-b0", timeout=5)
    [turn] = set(turn_ids(frames))
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await alice_async.post(url(chat_session, "stop"), {"turn": turn})
    assert response.status_code == 204
    await frames_until(comm, rf'id="turn-{turn}" data-gone', timeout=3)
    assert loop.time() - started < 1.0
    [reply] = await assistants(chat_session)
    msg = stored_message(reply)
    assert msg["stopReason"] == "aborted" and msg["errorMessage"] == "Request was aborted"
    assert msg["content"] and msg["content"][0]["text"].strip()
    await comm.disconnect()


async def test_stop_from_another_process_via_the_flag(settings, chat_session, alice_async, turn_worker):
    """The flag on the row is what other processes set; the runner polls it."""
    settings.PIWEB_DEMO_DELAY = "0.3"
    await alice_async.post(url(chat_session, "send"), {"text": "x"})
    turn = await StreamingTurn.objects.aget(session=chat_session)
    await asyncio.sleep(0.4)
    await StreamingTurn.objects.filter(pk=turn.pk).aupdate(abort_requested=True)
    started = asyncio.get_running_loop().time()
    await wait_turns_done(chat_session, timeout=3)
    assert asyncio.get_running_loop().time() - started < 1.0
    [reply] = await assistants(chat_session)
    assert stored_message(reply)["stopReason"] == "aborted"


async def test_regenerate_edit_and_continue_make_siblings(chat_session, alice_async, turn_worker):
    await alice_async.post(url(chat_session, "send"), {"text": "first"})
    await wait_turns_done(chat_session)
    [reply] = await assistants(chat_session)
    user = await Entry.objects.aget(session=chat_session, role="user")
    assert (await alice_async.post(url(chat_session, "regenerate"), {"entry": reply.entry_id})).status_code == 204
    await wait_turns_done(chat_session)
    replies = await assistants(chat_session)
    assert len(replies) == 2 and {r.parent_id for r in replies} == {user.entry_id}
    assert (
        await alice_async.post(url(chat_session, "edit"), {"entry": user.entry_id, "text": "edited"})
    ).status_code == 204
    await wait_turns_done(chat_session)
    users = [e async for e in Entry.objects.filter(session=chat_session, role="user").order_by("seq")]
    assert len(users) == 2 and users[1].parent_id == user.parent_id
    assert "edited" in stored_message((await assistants(chat_session))[-1])["content"][0]["text"]
    # Regenerating a user message or editing an assistant one is refused.
    assert (await alice_async.post(url(chat_session, "regenerate"), {"entry": user.entry_id})).status_code == 400
    assert (
        await alice_async.post(url(chat_session, "edit"), {"entry": reply.entry_id, "text": "x"})
    ).status_code == 400
    # Continue from any node: a reply under the first user message again.
    assert (await alice_async.post(url(chat_session, "continue"), {"entry": user.entry_id})).status_code == 204
    await wait_turns_done(chat_session)
    assert len([r for r in await assistants(chat_session) if r.parent_id == user.entry_id]) == 3


async def test_two_sends_at_the_same_moment_make_two_siblings(chat_session, alice, alice_async, turn_worker):
    leaf = chat_session.leaf_id
    r1, r2 = await asyncio.gather(
        alice_async.post(url(chat_session, "send"), {"text": "A", "parent": leaf}),
        alice_async.post(url(chat_session, "send"), {"text": "B", "parent": leaf}),
    )
    assert r1.status_code == r2.status_code == 200
    await wait_turns_done(chat_session)
    users = [e async for e in Entry.objects.filter(session=chat_session, role="user")]
    assert len(users) == 2 and {u.parent_id for u in users} == {leaf}
    replies = await assistants(chat_session)
    assert {r.parent_id for r in replies} == {u.entry_id for u in users}


async def test_commands_need_login_csrf_and_ownership(chat_session, alice, bob, turn_worker):
    from django.test import AsyncClient, Client

    anon = AsyncClient()
    assert (await anon.post(url(chat_session, "send"), {"text": "x"})).status_code == 302
    c = Client(enforce_csrf_checks=True)
    await sync_to_async(c.force_login)(alice)
    strict = AsyncClient(enforce_csrf_checks=True)
    strict.cookies = c.cookies
    assert (await strict.post(url(chat_session, "send"), {"text": "x"})).status_code == 403
    b = Client()
    await sync_to_async(b.force_login)(bob)
    other = AsyncClient()
    other.cookies = b.cookies
    assert (await other.post(url(chat_session, "send"), {"text": "x"})).status_code == 404
    assert (await other.get(url(chat_session, "send"))).status_code == 405
    assert not await Entry.objects.filter(session=chat_session, role="user").aexists()


async def test_empty_text_and_unknown_turn(chat_session, alice_async, turn_worker):
    assert (await alice_async.post(url(chat_session, "send"), {"text": "   "})).status_code == 400
    assert (await alice_async.post(url(chat_session, "stop"), {"turn": "nope"})).status_code == 404


async def test_continue_from_an_unknown_entry_changes_nothing(chat_session, alice_async, turn_worker):
    leaf = chat_session.leaf_id
    assert (await alice_async.post(url(chat_session, "continue"), {"entry": "nope"})).status_code == 404
    await chat_session.arefresh_from_db()
    assert chat_session.leaf_id == leaf
    assert not await StreamingTurn.objects.filter(session=chat_session).aexists()


async def test_live_entry_from_a_service_call_reaches_viewer(chat_session, alice, turn_worker):
    comm = await connect(alice, chat_session)
    await frames_until(comm, "chat-presence")
    started = asyncio.get_running_loop().time()
    await sync_to_async(services.session_rename)(session=chat_session, name="renamed <i>")
    frame = (await frames_until(comm, "session-live", timeout=1))[-1]
    assert asyncio.get_running_loop().time() - started < 1.0
    assert "Renamed to “renamed &lt;i&gt;" in frame
    await comm.disconnect()
