"""leaf_move: pi's branch(id) / resetLeaf(). piweb persists the leaf; no entry is written."""

from __future__ import annotations

import json

import pytest

from sessions_app.errors import EntryNotFound
from sessions_app.models import Session
from sessions_app.store import selectors, services
from tests.builders import assistant, user
from tests.store.helpers import assert_tree, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice)
    for i in range(4):
        services.entry_append(session=session, payload=user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    return session


def ids(session: Session) -> list[str]:
    return [e.entry_id for e in assert_tree(session)]


def test_it_moves_the_leaf_without_writing(session):
    before = snapshot(session)
    target = ids(session)[1]
    result = services.leaf_move(session=session, entry_id=target)
    assert result.leaf_id == target
    assert session.leaf_id == target
    assert Session.objects.get(pk=session.pk).leaf_id == target  # persisted
    assert snapshot(session) == before


def test_the_next_append_branches_from_the_new_leaf(session):
    all_ids = ids(session)
    services.leaf_move(session=session, entry_id=all_ids[1])
    fresh = Session.objects.get(pk=session.pk)  # another request sees the moved leaf
    branch = services.entry_append(session=fresh, payload=user("other way"))
    assert branch.parent_id == all_ids[1]
    assert branch.depth == 2
    context = selectors.session_context(session=fresh)
    assert [m["content"][0]["text"] for m in context["messages"]] == ["u0", "a1", "other way"]
    assert_tree(session, expected=5)


def test_moving_to_none_then_appending_creates_a_second_root(session):
    services.leaf_move(session=session, entry_id=None)
    assert Session.objects.get(pk=session.pk).leaf_id is None
    assert selectors.session_context(session=session)["messages"] == []
    root = services.entry_append(session=session, payload=user("new start"))
    assert root.parent_id is None
    assert json.loads(root.raw)["parentId"] is None
    assert root.depth == 0
    stored = assert_tree(session, expected=5)
    assert [e.entry_id for e in stored if e.parent_id is None] == [stored[0].entry_id, root.entry_id]
    assert [m["content"][0]["text"] for m in selectors.session_context(session=session)["messages"]] == ["new start"]


def test_an_unknown_entry_is_refused_and_the_leaf_stays(session):
    leaf = session.leaf_id
    with pytest.raises(EntryNotFound, match="Entry missing1 not found"):
        services.leaf_move(session=session, entry_id="missing1")
    assert session.leaf_id == leaf
    assert Session.objects.get(pk=session.pk).leaf_id == leaf


def test_moving_to_the_current_leaf_changes_nothing(session):
    before = snapshot(session)
    services.leaf_move(session=session, entry_id=session.leaf_id)
    assert snapshot(session) == before
    assert Session.objects.get(pk=session.pk).leaf_id == ids(session)[-1]


def test_a_stale_session_object_still_appends_under_the_stored_leaf(session):
    stale = Session.objects.get(pk=session.pk)
    target = ids(session)[0]
    services.leaf_move(session=session, entry_id=target)
    # The service re-reads the session under its lock, so the caller's copy cannot be stale.
    entry = services.entry_append(session=stale, payload=assistant("from stale"))
    assert entry.parent_id == target
    assert stale.leaf_id == entry.entry_id
    assert stale.last_seq == 5
