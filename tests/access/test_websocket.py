"""The websocket: connecting needs read access (every role, never outsiders or anonymous), and an
open socket closes when its user is removed from the team or deactivated."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session as DjangoSession
from django.test import Client

from sessions_app.access import revoke, teams
from tests.worlds import ROLES, World, make_world

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]
ORIGIN = (b"origin", b"http://testserver")


@pytest.fixture(autouse=True)
def _quiet(settings):
    settings.PIWEB_JANITOR = False


def cookie(world: World, name: str) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(world.users[name])
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def open_socket(world: World, who: str | None, scope: str) -> tuple[WebsocketCommunicator, bool]:
    from piweb.asgi import application

    headers = [ORIGIN]
    if who is not None:
        headers.append(await sync_to_async(cookie)(world, who))
    comm = WebsocketCommunicator(application, f"/ws/sessions/{world.sessions[scope].public_id}/", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    return comm, connected


async def closed(comm: WebsocketCommunicator, timeout: float = 3) -> bool:
    """True once the server closes the socket (frames before that are skipped). Waits with
    receive_nothing: a receive_output that times out would cancel the application."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await comm.receive_nothing(timeout=0.05):
            continue
        message = await comm.receive_output()
        if message["type"] == "websocket.close":
            return True
    return False


WS_CASES: list[tuple[str | None, str]] = [(who, scope) for who in ROLES for scope in ("team", "other", "personal")]
WS_CASES += [("owner", "personal"), (None, "team")]


@pytest.mark.parametrize(("who", "scope"), WS_CASES, ids=[f"{w}-{s}" for w, s in WS_CASES])
async def test_connect_needs_read_access(django_user_model, who, scope):
    world = await sync_to_async(make_world)(django_user_model)
    comm, connected = await open_socket(world, who, scope)
    assert connected == (who is not None and (scope == "team" or who == "owner"))
    await comm.disconnect()


async def test_removed_member_is_disconnected_others_stay(django_user_model):
    world = await sync_to_async(make_world)(django_user_model)
    editor, _ = await open_socket(world, "editor", "team")
    viewer, _ = await open_socket(world, "viewer", "team")
    await sync_to_async(teams.member_remove)(team=world.core, user=world.users["editor"], actor=world.users["admin"])
    assert await closed(editor)
    assert not await closed(viewer, timeout=0.5)
    await viewer.disconnect()


async def test_role_change_keeps_the_socket(django_user_model):
    world = await sync_to_async(make_world)(django_user_model)
    editor, _ = await open_socket(world, "editor", "team")
    await sync_to_async(teams.member_role_set)(
        team=world.core, user=world.users["editor"], role="viewer", actor=world.users["admin"]
    )
    await sync_to_async(revoke.user_revoked_publish)(user_id=world.users["editor"].pk)  # a recheck keeps it
    assert not await closed(editor, timeout=0.5)
    await editor.disconnect()


async def test_deactivation_closes_sockets_and_signs_out(django_user_model):
    world = await sync_to_async(make_world)(django_user_model)
    owner, _ = await open_socket(world, "owner", "personal")
    team, _ = await open_socket(world, "viewer", "team")
    other = await sync_to_async(cookie)(world, "editor")
    assert await DjangoSession.objects.acount() == 3
    await sync_to_async(revoke.user_deactivate)(user=world.users["owner"], actor=world.users["admin"])
    assert await closed(owner)
    assert not await closed(team, timeout=0.5)
    assert await DjangoSession.objects.acount() == 2  # the owner's one is gone, the others stay
    assert other
    await team.disconnect()
    # and signed out for good: the old cookie no longer reaches anything
    comm, connected = await open_socket(world, None, "personal")
    assert not connected
    await comm.disconnect()


async def test_moving_a_session_to_another_team_disconnects_the_old_team(django_user_model):
    world = await sync_to_async(make_world)(django_user_model)
    viewer, _ = await open_socket(world, "viewer", "team")
    await sync_to_async(teams.member_invite)(
        team=world.other, username="admin", role="editor", actor=world.users["other_admin"]
    )
    await sync_to_async(teams.session_move_to_team)(
        session=world.sessions["team"], team=world.other, actor=world.users["admin"]
    )
    assert await closed(viewer)
