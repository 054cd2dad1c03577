"""session_rename: a session_info entry; the name is the latest one's (pi's getSessionName).

The reference spec (pi v0.58) keeps the latest *non-empty* name; pi 0.73.1, the version piweb's
oracle tests run, lets an empty name clear it ("Empty names explicitly clear the session title").
piweb follows the pi it is checked against.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.core.tree import session_name
from sessions_app.models import Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import jsonl, user
from tests.store.helpers import assert_tree, keys, nodes

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice)
    services.entry_append(session=session, payload=user("q"))
    return session


def listed_name(owner: User, session: Session) -> str:
    (listed,) = [s for s in selectors.session_list_for_user(user=owner) if s.pk == session.pk]
    return listed.name


def test_it_appends_a_trimmed_session_info(session, alice):
    entry = services.session_rename(session=session, name="  Refactor the parser\t", author=alice)
    assert keys(entry) == ["type", "id", "parentId", "timestamp", "name"]
    assert json.loads(entry.raw)["name"] == "Refactor the parser"
    assert entry.author == alice
    assert session.leaf_id == entry.entry_id
    assert listed_name(alice, session) == "Refactor the parser"
    assert session_name(nodes(session)) == "Refactor the parser"


def test_the_latest_name_wins(session, alice):
    services.session_rename(session=session, name="one")
    services.session_rename(session=session, name="two")
    assert listed_name(alice, session) == "two"
    assert session_name(nodes(session)) == "two"


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_name_clears_as_in_current_pi(session, alice, empty):
    services.session_rename(session=session, name="kept")
    entry = services.session_rename(session=session, name=empty)
    assert json.loads(entry.raw)["name"] == ""  # trimmed on write, as appendSessionInfo does
    assert listed_name(alice, session) == ""
    assert session_name(nodes(session)) is None
    services.session_rename(session=session, name="again")
    assert listed_name(alice, session) == "again"
    assert_tree(session, expected=4)


def test_names_on_other_branches_count_too(session, alice):
    root = session.leaf_id
    services.session_rename(session=session, name="first")
    services.leaf_move(session=session, entry_id=root)
    services.entry_append(session=session, payload=user("elsewhere"))
    services.leaf_move(session=session, entry_id=root)
    assert listed_name(alice, session) == "first"


def test_the_imported_name_follows_the_same_rule(alice):
    def info(entry_id: str, parent: str | None, **name: str) -> dict[str, Any]:
        return {
            "type": "session_info",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2025-12-08T23:22:55.000Z",
            **name,
        }

    head = {"type": "session", "version": 3, "id": "rename-imp", "timestamp": "2025-12-08T23:22:54.411Z", "cwd": "/"}
    session = pipeline.session_import(owner=alice, data=jsonl(head, info("a1", None, name=" Old "))).session
    assert Session.objects.get(pk=session.pk).name == "Old"
    grown = jsonl(head, info("a1", None, name=" Old "), info("a2", "a1"))  # no name at all: cleared
    pipeline.session_import(owner=alice, data=grown)
    assert Session.objects.get(pk=session.pk).name == ""
    assert session_name(nodes(session)) is None
