"""GET /api/sessions/{id}/export.jsonl: the session as a pi file."""

from __future__ import annotations

import itertools
import json
from urllib.parse import quote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.models import Session
from tests.paths import LARGE_SESSION
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db


def export(client, session_id: str):
    response = client.get(url(session_id, "/export.jsonl"))
    assert response.status_code == 200
    return response, b"".join(response.streaming_content)


def test_export_of_an_imported_v3_file_is_byte_identical(alice_client, generated):
    data = generated(entries=80, seed=5, compactions=2, labels=4, branch_prob=0.2)
    session_id = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)}).json()["id"]
    response, content = export(alice_client, session_id)
    assert content == data
    assert response["Content-Type"] == "application/x-ndjson"


def test_export_of_the_real_v1_fixture_is_migrated_to_v3(alice_client):
    data = LARGE_SESSION.read_bytes()
    response = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("large.jsonl", data)})
    assert response.status_code == 201
    assert response.json()["version"] == 1
    _, content = export(alice_client, response.json()["id"])
    original = [json.loads(raw) for raw in data.decode().splitlines()]
    exported = [json.loads(raw) for raw in content.decode().splitlines()]
    assert exported[0] == {**original[0], "version": 3}
    assert len(exported) == len(original)
    previous = None
    for before, after in zip(original[1:], exported[1:], strict=True):
        assert {k: v for k, v in after.items() if k not in ("id", "parentId")} == before
        assert after["parentId"] == previous  # v1 files are a single line of entries
        previous = after["id"]
    # The exported file is what piweb stores: uploading it again adds nothing.
    again = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("again.jsonl", content)})
    assert again.status_code == 200
    assert again.json()["entries"] == 0


def test_file_name_is_pis(alice_client, alice_session):
    response, _ = export(alice_client, alice_session.public_id)
    stamp = alice_session.created.replace(":", "-").replace(".", "-")
    assert ":" not in stamp
    assert response["Content-Disposition"] == f'attachment; filename="{stamp}_{alice_session.public_id}.jsonl"'


def test_file_name_for_a_known_timestamp(alice_client):
    header = {"type": "session", "version": 3, "id": "abc-123", "timestamp": "2026-01-05T09:00:00.123Z", "cwd": ""}
    data = (json.dumps(header) + "\n").encode()
    alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)})
    response, content = export(alice_client, "abc-123")
    assert response["Content-Disposition"] == 'attachment; filename="2026-01-05T09-00-00-123Z_abc-123.jsonl"'
    assert content == data


def test_export_of_a_created_session_is_pi_shaped(alice_client, alice_session):
    _, content = export(alice_client, alice_session.public_id)
    lines = [json.loads(raw) for raw in content.decode().splitlines()]
    header, entries = lines[0], lines[1:]
    assert header == {"type": "session", "version": 3, "id": alice_session.public_id,
                      "timestamp": alice_session.created, "cwd": "/home/alice/project"}  # fmt: skip
    assert [e["type"] for e in entries] == [
        "session_info", "model_change", "thinking_level_change", "message", "message", "message", "message",
    ]  # fmt: skip
    assert entries[0]["parentId"] is None
    for parent, child in itertools.pairwise(entries):
        assert child["parentId"] == parent["id"]
        assert list(child)[:4] == ["type", "id", "parentId", "timestamp"]


def test_export_round_trips_through_import(alice_client, bob_client, alice_session):
    _, content = export(alice_client, alice_session.public_id)
    Session.objects.filter(pk=alice_session.pk).update(public_id="moved-away")  # free the id for bob
    response = bob_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", content)})
    assert response.status_code == 201
    _, again = export(bob_client, alice_session.public_id)
    assert again == content


@pytest.mark.parametrize(
    ("session_id", "disposition"),
    [
        ('say "hi"', 'attachment; filename="2026-01-05T09-00-00-000Z_say hi.jsonl"'),
        ("sesión", "attachment; filename*=utf-8''2026-01-05T09-00-00-000Z_sesi%C3%B3n.jsonl"),
    ],
)
def test_file_name_of_an_unusual_imported_id_is_quoted(alice_client, session_id, disposition):
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-05T09:00:00.000Z"}
    data = (json.dumps(header) + "\n").encode()
    assert alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)}).status_code == 201
    response, content = export(alice_client, quote(session_id, safe=""))
    assert response["Content-Disposition"] == disposition
    assert content == data


@pytest.mark.parametrize("session_id", ["two\nlines", "a/b", ".", ".."])
def test_ids_that_cannot_name_a_url_are_refused_at_import(alice_client, session_id):
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-05T09:00:00.000Z"}
    data = (json.dumps(header) + "\n").encode()
    response = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)})
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"line": 1, "message": "field 'id' must not be '.' or '..', nor contain '/' or control characters"}
    ]
    assert not Session.objects.exists()
