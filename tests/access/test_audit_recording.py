"""Every audited action, done through the client, is recorded with its actor, object, client IP and
request id; the request id is echoed in X-Request-ID."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions_app.models import AuditRecord
from tests.builders import user

pytestmark = pytest.mark.django_db

IP = "203.0.113.7"


def last(action: str) -> AuditRecord:
    record = AuditRecord.objects.filter(action=action).order_by("-seq").first()
    assert record is not None, action
    return record


@pytest.fixture
def client(alice):
    return Client(REMOTE_ADDR=IP)


def call(client, method: str, path: str, rid: str, data=None, **kw):
    kw.setdefault("content_type", "application/json")
    if kw["content_type"] is None:  # a form, or no body
        del kw["content_type"]
    response = getattr(client, method)(path, data, headers={"X-Request-ID": rid}, **kw)
    assert response.status_code < 400, (path, response.status_code, response.content[:300])
    assert response["X-Request-ID"] == rid
    return response


def check(action: str, rid: str, *, obj_id: str, actor: str = "alice", **fields) -> AuditRecord:
    record = last(action)
    assert (record.actor_username, record.ip, record.request_id, record.obj_id) == (actor, IP, rid, obj_id)
    for name, value in fields.items():
        assert getattr(record, name) == value, (action, name)
    return record


def test_every_action_is_recorded(client, alice):
    call(client, "post", "/accounts/login/", "r-signin", {"username": "alice", "password": "alice-pw"},
         content_type=None)  # fmt: skip
    check("signin.ok", "r-signin", obj_id=str(alice.pk))

    sid = call(client, "post", "/api/sessions", "r-create", {"name": "first"}).json()["id"]
    check("session.create", "r-create", obj_id=sid, obj_type="session", session_id=sid)
    e1 = call(client, "post", f"/api/sessions/{sid}/entries", "r-append", user("hi")).json()["id"]
    check("entry.append", "r-append", obj_id=e1, obj_type="entry", session_id=sid)
    e2 = call(client, "post", f"/api/sessions/{sid}/entries", "r-append2", user("again")).json()["id"]
    call(client, "put", f"/api/sessions/{sid}/leaf", "r-leaf", {"entryId": e1})
    check("leaf.move", "r-leaf", obj_id=sid, before=e2, after=e1)
    call(client, "post", f"/api/sessions/{sid}/labels", "r-label", {"targetId": e1, "label": "one"})
    call(client, "post", f"/api/sessions/{sid}/labels", "r-label2", {"targetId": e1, "label": "two"})
    check("label.set", "r-label2", obj_id=last("label.set").obj_id, before="one", after="two", extra={"target": e1})
    call(client, "patch", f"/api/sessions/{sid}", "r-rename", {"name": "second"})
    check("session.rename", "r-rename", obj_id=last("session.rename").obj_id, before="first", after="second")
    call(client, "get", f"/api/sessions/{sid}/context", "r-context", content_type=None)
    check("session.context", "r-context", obj_id=sid)
    call(client, "get", f"/api/sessions/{sid}/export.jsonl", "r-export", content_type=None)
    check("session.export", "r-export", obj_id=sid, extra={"format": "jsonl"})
    call(client, "get", f"/sessions/{sid}/", "r-open", content_type=None)
    check("session.open", "r-open", obj_id=sid)
    call(client, "get", f"/sessions/{sid}/export.html", "r-html", content_type=None)
    check("session.export", "r-html", obj_id=sid, extra={"format": "html"})
    fork = call(client, "post", f"/api/sessions/{sid}/fork", "r-fork", {"entryId": e1}).json()["id"]
    check("session.fork", "r-fork", obj_id=fork, extra={"from": sid, "at": e1})
    body = b"".join(client.get(f"/api/sessions/{sid}/export.jsonl").streaming_content)  # (streamed: read it now)
    call(client, "delete", f"/api/sessions/{sid}", "r-delete", content_type=None)
    check("session.delete", "r-delete", obj_id=sid)
    upload = SimpleUploadedFile("s.jsonl", body)
    call(client, "post", "/api/sessions/import", "r-import", {"file": upload}, content_type=None)
    imported = check("session.import", "r-import", obj_id=sid).extra
    assert imported is not None
    assert imported["created"] is True
    assert imported["source"] == "s.jsonl"
    assert imported["bytes"] == len(body)
    call(client, "post", "/accounts/logout/", "r-signout", content_type=None)
    check("signout", "r-signout", obj_id=str(alice.pk))
    call(client, "post", "/accounts/login/", "r-bad", {"username": "alice", "password": "wrong"},
         content_type=None)  # fmt: skip
    check("signin.failed", "r-bad", obj_id="alice", actor="", extra={"username": "alice"})

    from sessions_app.access.audit import audit_verify

    assert audit_verify().finding is None


def test_request_ids_are_generated_and_sanitized(client):
    generated = client.get("/accounts/login/")["X-Request-ID"]
    assert len(generated) == 32
    assert client.get("/accounts/login/", headers={"X-Request-ID": "bad id\r\nx"})["X-Request-ID"] != "bad id\r\nx"


def test_forwarded_for_is_used_only_behind_trusted_proxies(settings, alice):
    from django.test import RequestFactory

    from sessions_app.access.audit import client_ip

    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.9")
    assert client_ip(request) == "10.0.0.1"
    settings.PIWEB_TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "198.51.100.9"
    settings.PIWEB_TRUSTED_PROXY_COUNT = 2
    assert client_ip(request) == "6.6.6.6"
    settings.PIWEB_TRUSTED_PROXY_COUNT = 3
    assert client_ip(request) == "10.0.0.1"
