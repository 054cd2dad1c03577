"""The inbox socket (/ws/inbox/): the header badge counts open review requests for its own user,
and recounts live when one is made or done; the queue page's socket also sends the section counts.
Signed-out sockets are refused; another user's requests never reach a socket."""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from sessions_app.store import reviews
from tests.access.test_websocket import ORIGIN, cookie
from tests.worlds import World, make_world

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _quiet(settings):
    settings.PIWEB_JANITOR = False


async def inbox(world: World, who: str | None, path: str = "/ws/inbox/") -> tuple[WebsocketCommunicator, bool]:
    from piweb.asgi import application

    headers = [ORIGIN]
    if who is not None:
        headers.append(await sync_to_async(cookie)(world, who))
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    return comm, connected


async def badge(comm: WebsocketCommunicator, timeout: float = 5) -> int:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await comm.receive_nothing(timeout=0.05):
            continue
        found = re.search(r'id="inbox-badge"[^>]*data-inbox="(\d+)"', await comm.receive_from())
        if found:
            return int(found.group(1))
    raise AssertionError("no badge frame")


async def test_badge_counts_and_recounts_live(django_user_model):
    world: World = await sync_to_async(make_world)(django_user_model)
    session, admin = world.sessions["team"], world.users["admin"]
    reviewer, ok = await inbox(world, "reviewer")
    editor, _ = await inbox(world, "editor")
    outsider, _ = await inbox(world, "other_admin")
    try:
        assert ok
        assert await badge(reviewer) == 0 and await badge(editor) == 0 and await badge(outsider) == 0
        await sync_to_async(reviews.request_create)(session=session, requester=admin, reviewer="reviewer")
        assert await badge(reviewer) == 1
        await sync_to_async(reviews.request_create)(session=session, requester=admin, team="core")
        assert await badge(reviewer) == 2 and await badge(editor) == 1
        await sync_to_async(reviews.verdict_create)(
            session=session, reviewer=world.users["reviewer"], entry_id=world.ids["team"]["a2"], verdict="approved"
        )
        assert await badge(reviewer) == 0  # both done: its own and the team's
        assert await badge(editor) == 0  # the team's request is done for everyone
        assert await outsider.receive_nothing(timeout=0.3)  # nothing of Core's reached another team
    finally:
        for comm in (reviewer, editor, outsider):
            await comm.disconnect()


async def test_queue_page_socket_sends_counts(django_user_model):
    world: World = await sync_to_async(make_world)(django_user_model)
    comm, _ = await inbox(world, "reviewer", "/ws/inbox/?queue=1")
    try:
        first = await comm.receive_from(timeout=5)
        assert 'id="queue-count-requested"' in first and 'id="queue-count-flagged"' in first
        await sync_to_async(reviews.request_create)(
            session=world.sessions["team"], requester=world.users["admin"], reviewer="reviewer"
        )
        frame = await comm.receive_from(timeout=5)
        assert re.search(r'id="queue-count-requested"[^>]*>1<', frame) and 'data-inbox="1"' in frame
    finally:
        await comm.disconnect()


async def test_signed_out_refused(django_user_model):
    world: World = await sync_to_async(make_world)(django_user_model)
    _, connected = await inbox(world, None)
    assert not connected


async def test_a_deactivated_users_inbox_socket_closes_at_once(django_user_model):
    """Deactivation tells the user's sockets (revoke.user_group) to recheck: the inbox closes then,
    not at its next review event."""
    from sessions_app.access import revoke

    world: World = await sync_to_async(make_world)(django_user_model)
    comm, connected = await inbox(world, "reviewer")
    try:
        assert connected and await badge(comm) == 0
        await sync_to_async(revoke.user_deactivate)(user=world.users["reviewer"], actor=world.users["admin"])
        assert (await comm.receive_output(timeout=5))["type"] == "websocket.close"
    finally:
        await comm.disconnect()
