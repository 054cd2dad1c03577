"""A session's id is its pi header's (no '/', no control characters), so it may hold '?', '#', '%',
spaces and unicode: the page's socket URL carries it percent-encoded like every other URL. (An id a
browser would resolve away as a path segment, '.' or '..', is refused at import: test_session_export.)"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from sessions_app.store.importing import pipeline
from tests.builders import entry, header, jsonl

ODD_SESSION = "s ?#%41 ünï"


@pytest.mark.django_db
def test_the_page_of_a_session_with_an_odd_id_links_its_socket_encoded(alice, alice_client):
    pipeline.session_import(owner=alice, data=jsonl(header(ODD_SESSION), entry("a", None)))
    r = alice_client.get(f"/sessions/{quote(ODD_SESSION, safe='')}/")
    assert r.status_code == 200
    socket = re.search(r'ws-connect="([^"]*)"', r.content.decode())
    assert socket and html.unescape(socket.group(1)) == f"/ws/sessions/{quote(ODD_SESSION, safe='')}/"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_socket_of_a_session_with_an_odd_id_connects(alice, settings):
    from piweb.asgi import application

    settings.PIWEB_JANITOR = False
    await sync_to_async(pipeline.session_import)(owner=alice, data=jsonl(header(ODD_SESSION), entry("a", None)))
    client = Client()
    await sync_to_async(client.force_login)(alice)
    headers = [
        (b"origin", b"http://testserver"),
        (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
    ]
    comm = WebsocketCommunicator(application, f"/ws/sessions/{quote(ODD_SESSION, safe='')}/", headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    await comm.disconnect()
