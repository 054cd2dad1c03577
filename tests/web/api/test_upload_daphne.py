"""Uploads through a real daphne: Twisted's own multipart parsing is off (piweb/uploads.py), and
Django still gets the whole file."""

from __future__ import annotations

import json
import urllib.request
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from daphne.http_protocol import WebRequest
from twisted.web.test.requesthelper import DummyChannel

from piweb import uploads
from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import Entry, Session
from tests.servers import Processes, server_env

pytestmark = [pytest.mark.django_db(transaction=True)]


def daphne_request() -> Any:
    channel: Any = DummyChannel()  # type: ignore[no-untyped-call]
    channel.factory = SimpleNamespace(server=SimpleNamespace(protocol_connected=lambda request: None))
    return WebRequest(channel)


def test_daphne_requests_no_longer_parse_form_bodies():
    assert uploads.install() is True
    assert uploads.install() is True  # twice: still one wrapper
    assert daphne_request()._parsePOSTFormSubmission is False
    init: Any = WebRequest.__init__
    assert init.__wrapped__.__name__ == "__init__"
    assert not hasattr(init.__wrapped__, "__wrapped__")


def multipart(field: str, name: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n\r\n'
    return head.encode() + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_a_file_uploaded_to_daphne_is_imported_whole(processes: Processes, alice, generated):
    data = generated(entries=400, seed=21, branch_prob=0.1, labels=4)
    token = api_token_create(user=alice, name="upload")[1]
    base = processes.daphne(server_env())
    body, content_type = multipart("file", "s.jsonl", data)
    request = urllib.request.Request(
        f"{base}/api/sessions/import",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 201
        answer = json.loads(response.read())
    assert answer["entries"] == 400
    session = Session.objects.get(public_id=answer["id"])
    assert Entry.objects.filter(session=session).count() == 400
    assert session.source_bytes == len(data)
