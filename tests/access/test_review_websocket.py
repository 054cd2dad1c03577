"""Review changes reach every viewer of the session live, each drawn for that viewer's role:
comments, replies, resolutions and verdicts, over the real websocket consumer."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from sessions_app.store import reviews
from tests.access.test_websocket import open_socket
from tests.worlds import World, make_world

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _quiet(settings):
    settings.PIWEB_JANITOR = False


async def review_frame(comm: WebsocketCommunicator, timeout: float = 5) -> str:
    """The next frame that redraws review threads (snapshot and presence frames are skipped)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await comm.receive_nothing(timeout=0.05):
            continue
        text = await comm.receive_from()
        if 'id="review-live"' in text:
            return str(text)
    raise AssertionError("no review frame")


async def test_every_viewer_sees_comments_and_verdicts_live(django_user_model):
    world: World = await sync_to_async(make_world)(django_user_model)
    session, a1 = world.sessions["team"], world.ids["team"]["a1"]
    reviewer, _ = await open_socket(world, "reviewer", "team")
    viewer, _ = await open_socket(world, "viewer", "team")
    try:
        root = await sync_to_async(reviews.comment_create)(
            session=session, author=world.users["editor"], entry_id=a1, body="*careful* here"
        )
        for_reviewer, for_viewer = await review_frame(reviewer), await review_frame(viewer)
        for frame in (for_reviewer, for_viewer):
            assert f'id="comment-{root.pk}"' in frame and "<em>careful</em> here" in frame
        assert 'data-action="reply"' in for_reviewer  # drawn for each socket's role
        assert 'data-action="reply"' not in for_viewer

        await sync_to_async(reviews.comment_update)(
            comment=root, session=session, user=world.users["editor"], resolved=True
        )
        assert "Resolved." in await review_frame(viewer)
        await review_frame(reviewer)

        await sync_to_async(reviews.verdict_create)(
            session=session, reviewer=world.users["reviewer"], entry_id=a1, verdict="approved"
        )
        assert f'data-entry="{a1}"' in await review_frame(viewer)
    finally:
        await reviewer.disconnect()
        await viewer.disconnect()
