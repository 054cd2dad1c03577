"""POST /api/sessions/import: upload a pi JSONL file (multipart field `file`)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.models import Entry, Session
from tests.builders import assistant, entry, header, jsonl
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db

HEADER = header("11111111-2222-4333-8444-555555555555")


def upload(client, data: bytes, name: str = "session.jsonl", **form):
    return client.post(url(suffix="/import"), {"file": SimpleUploadedFile(name, data), **form})


def test_import_generated_session(alice, alice_client, generated):
    data = generated(entries=60, seed=2, compactions=1, labels=3)
    header = json.loads(data.split(b"\n", 1)[0])
    response = upload(alice_client, data)
    assert response.status_code == 201
    body = response.json()
    assert body["id"] == header["id"]
    assert body["created"] is True
    assert body["entries"] == 60
    assert body["skipped"] == []
    assert body["version"] == 3
    assert body["session"]["id"] == header["id"]
    assert body["session"]["entries"] == 60
    session = Session.objects.get(public_id=header["id"])
    assert session.owner == alice
    assert session.entries.count() == 60
    last = json.loads(data.rstrip(b"\n").rsplit(b"\n", 1)[1])
    assert session.leaf_id == last["id"] == body["session"]["leafId"]


def test_reupload_adds_nothing(alice_client, generated):
    data = generated(entries=30, seed=3)
    assert upload(alice_client, data).status_code == 201
    response = upload(alice_client, data)
    assert response.status_code == 200
    body = response.json()
    assert body["created"] is False
    assert body["entries"] == 0
    assert Entry.objects.count() == 30


def test_grown_file_adds_only_new_lines(alice_client):
    first = jsonl(HEADER, entry("a1", None, text="hello"))
    assert upload(alice_client, first).json()["entries"] == 1
    grown = first + jsonl(entry("a2", "a1", message=assistant("hi!")["message"]))
    response = upload(alice_client, grown)
    assert response.status_code == 201
    assert response.json()["created"] is False
    assert response.json()["entries"] == 1
    assert response.json()["session"]["leafId"] == "a2"
    assert list(Entry.objects.order_by("seq").values_list("entry_id", flat=True)) == ["a1", "a2"]


def test_bad_file_is_rejected_whole(alice_client):
    data = jsonl(HEADER, entry("a1", None, text="fine"), "{not json", entry("a3", "missing", text="orphan"))
    response = upload(alice_client, data)
    assert response.status_code == 400
    body = response.json()
    assert [e["line"] for e in body["errors"]] == [3, 4]
    assert all(set(e) == {"line", "message"} for e in body["errors"])
    assert "missing" in body["errors"][1]["message"]
    assert "nothing was imported" in body["message"]
    assert Session.objects.count() == 0
    assert Entry.objects.count() == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b'{"type":"message","id":"x"}\n', "session header"),
        (b"garbage\n", "broken header"),
    ],
)
def test_file_without_usable_header(alice_client, data, message):
    response = upload(alice_client, data)
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert message in error["message"]
    assert Session.objects.count() == 0


def test_partial_imports_the_valid_part(alice_client):
    data = jsonl(
        HEADER,
        entry("a1", None, text="fine"),
        "{not json",
        entry("a3", "a1", text="also fine"),
        entry("a4", "zz", text="orphan"),
    )
    response = upload(alice_client, data, partial="true")
    assert response.status_code == 201
    body = response.json()
    assert body["entries"] == 2
    assert [s["line"] for s in body["skipped"]] == [3, 5]
    assert all(s["message"] for s in body["skipped"])
    session = Session.objects.get(public_id=HEADER["id"])
    assert sorted(session.entries.values_list("entry_id", flat=True)) == ["a1", "a3"]
    assert [p["line"] for p in session.import_report] == [3, 5]


def test_partial_false_is_the_default(alice_client):
    data = jsonl(HEADER, entry("a1", None, text="fine"), "{not json")
    assert upload(alice_client, data, partial="false").status_code == 400
    assert Session.objects.count() == 0


def test_old_version_is_migrated(alice_client):
    v1_header = {"type": "session", "id": "v1-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    v1_message = {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z",
                  "message": {"role": "user", "content": "hi", "timestamp": 1735689601000}}  # fmt: skip
    data = (json.dumps(v1_header) + "\n" + json.dumps(v1_message) + "\n").encode()
    response = upload(alice_client, data)
    assert response.status_code == 201
    assert response.json()["version"] == 1
    [entry] = Entry.objects.filter(session__public_id="v1-session")
    assert entry.parent_id is None
    assert entry.entry_id


def test_someone_elses_session_id_becomes_a_new_session_that_reveals_nothing(alice_client, bob_client):
    """bob's upload of a file whose pi id alice holds is answered as any new import: 201, created,
    the same keys and messages; his session gets a new server id and keeps pi's id as source id."""
    data = jsonl(HEADER, entry("a1", None, text="first words"))
    first = upload(alice_client, data)
    assert first.status_code == 201
    response = upload(bob_client, data)
    assert response.status_code == 201
    body = response.json()
    assert body["created"] is True and body["entries"] == 1 and body["skipped"] == []
    assert body["id"] != HEADER["id"]
    assert set(body) == set(first.json())
    assert "alice" not in response.content.decode() and "another account" not in response.content.decode()
    bobs = Session.objects.get(public_id=body["id"])
    assert (bobs.owner.username, bobs.source_id) == ("bob", HEADER["id"])
    assert Session.objects.get(public_id=HEADER["id"]).owner.username == "alice"
    export = bob_client.get(url(body["id"], "/export.jsonl"))
    assert b"".join(export.streaming_content) == data  # pi's header id kept byte for byte
    assert HEADER["id"] in export["Content-Disposition"]  # named as pi names the file
    # bob's re-import of the grown file finds his session by pi's id and adds only the new line
    grown = jsonl(HEADER, entry("a1", None, text="first words"), entry("b2", "a1", text="next words"))
    again = upload(bob_client, grown)
    assert again.status_code == 201
    assert (again.json()["id"], again.json()["created"], again.json()["entries"]) == (body["id"], False, 1)
    assert Entry.objects.filter(session__public_id=HEADER["id"]).count() == 1


def test_file_field_is_required(alice_client):
    response = alice_client.post(url(suffix="/import"), {})
    assert response.status_code == 422


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"id": "s" * 201}, "id"), ({"timestamp": "2026-01-05T09:00:00." + "0" * 60 + "Z"}, "timestamp")],
)
def test_header_values_too_long_to_store_are_rejected(alice_client, fields, field):
    data = jsonl({**HEADER, **fields}, entry("a1", None, text="hi"))
    response = upload(alice_client, data)
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["line"] == 1
    assert f"field '{field}'" in error["message"]
    assert Session.objects.count() == 0


def test_entry_ids_too_long_to_store_are_rejected_with_their_line(alice_client):
    long_id = "e" * 201
    data = jsonl(
        HEADER,
        entry("a1", None, text="fine"),
        entry(long_id, "a1", text="too long"),
        entry("a3", long_id, text="child"),
    )
    response = upload(alice_client, data)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e["line"] for e in errors] == [3, 4]
    assert "field 'id'" in errors[0]["message"]
    partial = upload(alice_client, data, partial="true")
    assert partial.status_code == 201
    assert partial.json()["entries"] == 1
    assert [s["line"] for s in partial.json()["skipped"]] == [3, 4]
