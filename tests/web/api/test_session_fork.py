"""POST /api/sessions/{id}/fork: a new session holding the path to an entry."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import Session
from sessions_app.store import services
from tests.builders import user
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db


def fork(client, session_id: str, entry_id: str):
    return client.post(url(session_id, "/fork"), {"entryId": entry_id}, content_type="application/json")


def test_fork_holds_the_path(alice, alice_client, alice_session):
    ids = entry_ids(alice_session)
    services.leaf_move(session=alice_session, entry_id=ids[4])
    services.entry_append(session=alice_session, payload=user("other branch"), author=alice)
    response = fork(alice_client, alice_session.public_id, ids[5])
    assert response.status_code == 201
    body = response.json()
    assert body["id"] != alice_session.public_id
    assert body["parentSessionId"] == alice_session.public_id
    assert body["cwd"] == alice_session.cwd
    assert body["leafId"] == ids[5]
    assert body["entries"] == 6
    forked = Session.objects.get(public_id=body["id"])
    assert forked.owner == alice
    tree = alice_client.get(url(body["id"], "/tree")).json()
    assert [n["id"] for n in tree["nodes"]] == ids[:6]
    original_ctx = alice_client.get(url(alice_session.public_id, "/context"), {"leaf": ids[5]}).json()
    fork_ctx = alice_client.get(url(body["id"], "/context")).json()
    assert fork_ctx == original_ctx
    # the original is untouched
    assert alice_client.get(url(alice_session.public_id)).json()["entries"] == 8
    assert [s["id"] for s in alice_client.get(url()).json()].count(body["id"]) == 1


def test_fork_exports_lines_unchanged(alice_client, alice_session):
    ids = entry_ids(alice_session)
    body = fork(alice_client, alice_session.public_id, ids[-1]).json()
    original = b"".join(alice_client.get(url(alice_session.public_id, "/export.jsonl")).streaming_content)
    copied = b"".join(alice_client.get(url(body["id"], "/export.jsonl")).streaming_content)
    assert copied.splitlines()[1:] == original.splitlines()[1:]
    header = json.loads(copied.splitlines()[0])
    assert header["id"] == body["id"]
    assert header["version"] == 3


def test_fork_recreates_labels_on_the_path(alice, alice_client, alice_session):
    ids = entry_ids(alice_session)
    services.label_set(session=alice_session, target_id=ids[3], label="on path", author=alice)
    services.label_set(session=alice_session, target_id=ids[6], label="off path", author=alice)
    body = fork(alice_client, alice_session.public_id, ids[4]).json()
    nodes = alice_client.get(url(body["id"], "/tree")).json()["nodes"]
    assert {n["id"]: n["label"] for n in nodes if "label" in n} == {ids[3]: "on path"}
    assert [n["type"] for n in nodes].count("label") == 1


def test_fork_unknown_entry(alice_client, alice_session):
    response = fork(alice_client, alice_session.public_id, "nope")
    assert response.status_code == 404
    assert response.json() == {"message": "Entry nope not found", "extra": {"entryId": "nope"}}
    assert Session.objects.count() == 1
