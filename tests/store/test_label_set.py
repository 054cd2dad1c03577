"""label_set: pi's appendLabelChange: a label entry at the leaf; last one wins, empty clears."""

from __future__ import annotations

import json

import pytest

from sessions_app.core.tree import labels as tree_labels
from sessions_app.errors import EntryNotFound
from sessions_app.models import Session
from sessions_app.store import selectors, services
from tests.builders import assistant, user
from tests.store.helpers import assert_tree, counts, keys, nodes

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice)
    services.entry_append(session=session, payload=user("q"))
    services.entry_append(session=session, payload=assistant("a"))
    return session


def labels(session: Session) -> dict[str, str]:
    resolved = selectors.labels(session=session)
    assert resolved == tree_labels(nodes(session))  # the selector agrees with the pure replay
    return resolved


def test_it_appends_a_label_entry_at_the_leaf(session, alice):
    first, second = assert_tree(session)
    entry = services.label_set(session=session, target_id=first.entry_id, label="start", author=alice)
    data = json.loads(entry.raw)
    assert keys(entry) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
    assert data["targetId"] == first.entry_id
    assert data["label"] == "start"
    assert data["parentId"] == second.entry_id  # a tree node on the path, like every entry
    assert session.leaf_id == entry.entry_id
    assert entry.author == alice
    assert labels(session) == {first.entry_id: "start"}


def test_the_label_is_trimmed(session):
    target = session.leaf_id
    entry = services.label_set(session=session, target_id=target, label="  keep me \n")
    assert json.loads(entry.raw)["label"] == "keep me"
    assert labels(session) == {target: "keep me"}


@pytest.mark.parametrize("empty", [None, "", "   "])
def test_an_empty_label_clears(session, empty):
    target = session.leaf_id
    services.label_set(session=session, target_id=target, label="x")
    entry = services.label_set(session=session, target_id=target, label=empty)
    assert keys(entry) == ["type", "id", "parentId", "timestamp", "targetId"]  # no label key at all
    assert labels(session) == {}
    assert_tree(session, expected=4)


def test_the_last_label_wins_whatever_the_branch(session):
    first, second = assert_tree(session)
    services.label_set(session=session, target_id=first.entry_id, label="one")
    services.leaf_move(session=session, entry_id=first.entry_id)
    services.entry_append(session=session, payload=assistant("other branch"))
    services.label_set(session=session, target_id=first.entry_id, label="two")
    services.label_set(session=session, target_id=second.entry_id, label="b")
    assert labels(session) == {first.entry_id: "two", second.entry_id: "b"}
    services.leaf_move(session=session, entry_id=second.entry_id)  # back on the first branch
    assert labels(session) == {first.entry_id: "two", second.entry_id: "b"}
    services.label_set(session=session, target_id=first.entry_id, label=None)
    assert labels(session) == {second.entry_id: "b"}


def test_labels_keep_javascript_map_order(session):
    first, second = assert_tree(session)
    services.label_set(session=session, target_id=first.entry_id, label="a")
    services.label_set(session=session, target_id=second.entry_id, label="b")
    services.label_set(session=session, target_id=first.entry_id, label="a2")  # keeps its place
    assert list(labels(session).items()) == [(first.entry_id, "a2"), (second.entry_id, "b")]
    services.label_set(session=session, target_id=first.entry_id, label="")
    services.label_set(session=session, target_id=first.entry_id, label="a3")  # re-added: goes last
    assert list(labels(session).items()) == [(second.entry_id, "b"), (first.entry_id, "a3")]


def test_a_label_entry_can_itself_be_labelled(session):
    label = services.label_set(session=session, target_id=session.leaf_id, label="x")
    services.label_set(session=session, target_id=label.entry_id, label="meta")
    assert labels(session)[label.entry_id] == "meta"


def test_labels_never_reach_the_context(session):
    before = selectors.session_context(session=session)
    services.label_set(session=session, target_id=session.leaf_id, label="x")
    after = selectors.session_context(session=session)
    assert after["messages"] == before["messages"]


def test_an_unknown_target_is_refused_and_nothing_is_stored(session):
    before, leaf = counts(), session.leaf_id
    with pytest.raises(EntryNotFound, match="Entry nowhere not found"):
        services.label_set(session=session, target_id="nowhere", label="x")
    assert counts() == before
    session.refresh_from_db()
    assert session.leaf_id == leaf


def test_a_target_in_another_session_is_unknown(session, alice):
    other = services.session_create(owner=alice)
    foreign = services.entry_append(session=other, payload=user("elsewhere"))
    with pytest.raises(EntryNotFound):
        services.label_set(session=session, target_id=foreign.entry_id, label="x")
