"""SessionConsumer through piweb.asgi.application: access, snapshot, live events, presence."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from piweb.asgi import application
from sessions_app.store import services
from tests.live.sockets import ORIGIN, connect, cookie_header, frames_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def rejected(headers, session) -> bool:
    comm = WebsocketCommunicator(application, f"/ws/sessions/{session.public_id}/", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    await comm.disconnect()
    return not connected


async def test_anonymous_rejected(chat_session, turn_worker):
    assert await rejected([ORIGIN], chat_session)


async def test_other_user_rejected(chat_session, bob, turn_worker):
    assert await rejected([ORIGIN, await sync_to_async(cookie_header)(bob)], chat_session)


async def test_foreign_origin_rejected(chat_session, alice, turn_worker):
    headers = [(b"origin", b"http://evil.example"), await sync_to_async(cookie_header)(alice)]
    assert await rejected(headers, chat_session)


async def test_owner_gets_snapshot_then_presence(chat_session, alice, turn_worker):
    await sync_to_async(services.entry_append)(
        session=chat_session,
        payload={"type": "message", "message": {"role": "user", "content": "<b>hi</b>", "timestamp": 1}},
    )
    comm = await connect(alice, chat_session)
    try:
        snap = await comm.receive_from(timeout=5)
        assert 'id="chat-log"' in snap and 'hx-swap-oob="true"' in snap
        assert "&lt;b&gt;hi&lt;/b&gt;" in snap or "<b>hi</b>" not in snap
        assert 'id="chat-streaming"' in snap
        assert 'id="session-live"' in snap and 'data-seq="2"' in snap
        assert 'id="chat-parent"' in snap
        presence = await comm.receive_from(timeout=5)
        assert 'id="chat-presence"' in presence and "<li>alice</li>" in presence
    finally:
        await comm.disconnect()


async def test_unknown_session_rejected(alice, turn_worker):
    class Fake:
        public_id = "no-such-session"

    assert await rejected([ORIGIN, await sync_to_async(cookie_header)(alice)], Fake)


async def test_every_change_reaches_viewers(chat_session, alice, turn_worker):
    first = await sync_to_async(services.entry_append)(
        session=chat_session,
        payload={"type": "message", "message": {"role": "user", "content": "one", "timestamp": 1}},
    )
    comm = await connect(alice, chat_session)
    try:
        await frames_until(comm, "chat-presence")
        # An append at the leaf: the message is appended to the log (idempotently).
        await sync_to_async(services.entry_append)(
            session=chat_session,
            payload={"type": "message", "message": {"role": "user", "content": "two", "timestamp": 2}},
        )
        frame = (await frames_until(comm, "chat-log"))[-1]
        assert 'hx-swap-oob="beforeend:#chat-log"' in frame and "two" in frame
        # A label (an entry, hidden in the chat log) still moves the live state.
        await sync_to_async(services.label_set)(session=chat_session, target_id=first.entry_id, label="x")
        frame = (await frames_until(comm, "session-live"))[-1]
        assert 'data-seq="4"' in frame
        # Moving the leaf redraws the log for the new path.
        await sync_to_async(services.leaf_move)(session=chat_session, entry_id=first.entry_id)
        frame = (await frames_until(comm, 'id="chat-log"'))[-1]
        assert "one" in frame and "two" not in frame
        assert f'value="{first.entry_id}"' in frame  # the composer's parent follows the leaf
    finally:
        await comm.disconnect()


async def test_presence_join_and_leave(chat_session, alice, turn_worker):
    a = await connect(alice, chat_session)
    await frames_until(a, "chat-presence")
    b = await connect(alice, chat_session, query="?seq=0")
    await frames_until(b, "chat-presence")
    frame = (await frames_until(a, "chat-presence"))[-1]
    assert "<li>alice</li>" in frame
    await b.disconnect()
    frame = (await frames_until(a, "chat-presence"))[-1]
    assert frame.count("<li>") == 1
    await a.disconnect()
    from sessions_app.models import Viewer

    assert not await Viewer.objects.filter(session=chat_session).aexists()
