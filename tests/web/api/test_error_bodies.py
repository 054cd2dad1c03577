"""A 400 body lists each error once: a rejected import's problems in "errors" only, not again in
"extra"."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db


def test_a_rejected_import_lists_its_problems_once(alice_client):
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": ""}
    data = (json.dumps(header) + "\n{not json\n{also not json\n").encode()
    r = alice_client.post("/api/sessions/import", {"file": SimpleUploadedFile("s.jsonl", data)})
    assert r.status_code == 400
    body = r.json()
    assert [e["line"] for e in body["errors"]] == [2, 3]
    assert "errors" not in json.dumps(body["extra"])
    assert json.dumps(body).count("unexpected character") == 2  # one message per bad line


def test_a_json_body_over_the_servers_limit_is_413_with_a_clear_message(alice_client, alice_session, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    before = alice_session.entries.count()
    entry = {"type": "message", "message": {"role": "user", "content": "x" * (2 * 1024 * 1024)}}
    r = alice_client.post(
        f"/api/sessions/{alice_session.public_id}/entries", json.dumps(entry), content_type="application/json"
    )
    assert r.status_code == 413
    body = r.json()
    assert "over this server's limit of 1 MiB" in body["message"]
    assert body["extra"] == {"limit_bytes": 1024 * 1024}
    assert alice_session.entries.count() == before  # nothing stored
