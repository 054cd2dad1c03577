"""Importing a file whose session is already stored: its owner and the team's editors and admins
update it (a mirrored session kept up to date by whoever imports). For anyone else, the team's
viewers and reviewers included (a session is found among those the importer owns or may write:
the one id model of import, sync and pull), the file is a new session of their own, under a new
server id with pi's id as its source id, and the stored session is left as it was."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.errors import SessionConflict
from sessions_app.models import Entry, Session
from sessions_app.store import selectors
from sessions_app.store.importing import pipeline

pytestmark = pytest.mark.django_db


def grown_file(session: Session, text: str = "written by pi later") -> bytes:
    """The session as pi would have it after one more user message at its leaf."""
    data = "".join(selectors.export_lines(session=session)).encode()
    line = {
        "type": "message",
        "id": "feed0001",
        "parentId": session.leaf_id,
        "timestamp": "2026-01-05T10:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_767_607_200_000},
    }
    return data + json.dumps(line, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("name", ["editor", "admin"])
def test_a_team_editor_updates_the_team_session(world, name):
    session = world.sessions["team"]
    data = grown_file(session)
    result = pipeline.session_import(owner=world.users[name], data=data)
    assert (result.session.pk, result.created, result.added) == (session.pk, False, 1)
    added = Entry.objects.get(session=session, entry_id="feed0001")
    assert added.author_id == world.users[name].pk
    session.refresh_from_db()
    assert session.owner_id == world.users["admin"].pk and session.team_id == world.core.pk
    assert session.leaf_id == "feed0001"
    assert "".join(selectors.export_lines(session=session)).encode() == data


@pytest.mark.parametrize(
    ("name", "key"),
    [("owner", "team"), ("other_admin", "team"), ("editor", "personal"), ("viewer", "team"), ("reviewer", "team")],
)
def test_anyone_else_gets_a_session_of_their_own(world, name, key):
    session = world.sessions[key]
    before = Entry.objects.filter(session=session).count()
    data = grown_file(session)
    result = pipeline.session_import(owner=world.users[name], data=data)
    assert result.created
    mine = result.session
    assert (mine.owner_id, mine.team_id, mine.source_id) == (world.users[name].pk, None, session.public_id)
    assert mine.public_id != session.public_id
    assert "".join(selectors.export_lines(session=mine)).encode() == data  # pi's header id, byte for byte
    assert Entry.objects.filter(session=session).count() == before
    # importing it again finds their own copy by pi's id: nothing new, then only the new line
    again = pipeline.session_import(owner=world.users[name], data=data)
    assert (again.session.pk, again.created, again.added) == (mine.pk, False, 0)
    grown = data + grown_file(session, "more").rsplit(b"\n", 2)[1].replace(b"feed0001", b"feed0002") + b"\n"
    more = pipeline.session_import(owner=world.users[name], data=grown)
    assert (more.session.pk, more.created, more.added) == (mine.pk, False, 1)
    assert Entry.objects.filter(session=session).count() == before


def test_a_session_being_deleted_is_a_conflict(world):
    session = world.sessions["personal"]
    data = grown_file(session)
    Session.objects.filter(pk=session.pk).update(deleting=True)
    with pytest.raises(SessionConflict) as caught:
        pipeline.session_import(owner=world.users["owner"], data=data)
    assert "being deleted" in caught.value.message


def test_the_api_makes_a_viewer_a_copy_and_updates_the_session_for_an_editor(world):
    session = world.sessions["team"]
    data = grown_file(session)
    copy = world.client("viewer").post("/api/sessions/import", {"file": SimpleUploadedFile("s.jsonl", data)})
    assert copy.status_code == 201
    assert copy.json()["created"] is True and copy.json()["id"] != str(session.public_id)
    taken = world.client("editor").post("/api/sessions/import", {"file": SimpleUploadedFile("s.jsonl", data)})
    assert taken.status_code == 201  # lines were added
    assert (taken.json()["id"], taken.json()["entries"], taken.json()["created"]) == (str(session.public_id), 1, False)
