"""session_create: a fresh pi v3 header, optionally a session_info entry for the name."""

from __future__ import annotations

import json
import uuid

import pytest

from sessions_app.models import Entry
from sessions_app.store import selectors, services
from tests.builders import ISO_MS
from tests.store.helpers import assert_tree, keys

pytestmark = pytest.mark.django_db


def test_it_creates_a_v3_header_in_pi_key_order(alice):
    session = services.session_create(owner=alice, cwd="/home/alice/proj")
    header = json.loads(session.header_raw)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["type"] == "session"
    assert header["version"] == 3
    assert uuid.UUID(header["id"]).version == 4
    assert str(uuid.UUID(header["id"])) == header["id"]
    assert ISO_MS.match(header["timestamp"])
    assert header["cwd"] == "/home/alice/proj"
    assert session.header_raw == json.dumps(header, separators=(",", ":"))
    assert (session.public_id, session.created, session.cwd) == (header["id"], header["timestamp"], header["cwd"])
    assert "parentSession" not in header


def test_it_starts_empty_without_a_name(alice):
    session = services.session_create(owner=alice)
    assert session.owner == alice
    assert session.leaf_id is None
    assert session.last_seq == 0
    assert session.name == ""
    assert not Entry.objects.filter(session=session).exists()
    assert selectors.session_context(session=session) == {
        "leafId": None,
        "messages": [],
        "thinkingLevel": "off",
        "model": None,
    }


def test_it_writes_the_trimmed_name_as_a_session_info_entry(alice):
    session = services.session_create(owner=alice, name="  My session \n")
    (info,) = assert_tree(session, expected=1)
    data = json.loads(info.raw)
    assert keys(info) == ["type", "id", "parentId", "timestamp", "name"]
    assert data["name"] == "My session"
    assert data["parentId"] is None
    assert info.author == alice
    assert session.name == "My session"
    assert session.leaf_id == info.entry_id


@pytest.mark.parametrize("name", ["", "   ", None])
def test_it_writes_nothing_for_a_blank_name(alice, name):
    session = services.session_create(owner=alice, name=name)
    assert not Entry.objects.filter(session=session).exists()
    assert session.name == ""


def test_each_session_gets_its_own_id(alice, bob):
    made = [services.session_create(owner=user) for user in (alice, bob, alice)]
    assert len({s.public_id for s in made}) == 3
    assert [s.public_id for s in selectors.session_list_for_user(user=bob)] == [made[1].public_id]
