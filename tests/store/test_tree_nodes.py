"""tree_nodes: the flat tree from cached chunks equals the tree read afresh, after every kind of change,
and re-renders only the chunks a change touches."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.core.cache import cache

from sessions_app.models import Entry, Session
from sessions_app.store import selectors, services, tree_nodes
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db

CHUNK = 3


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(tree_nodes, "CHUNK", CHUNK)


@pytest.fixture
def rendered(monkeypatch) -> list[tuple[int, int]]:
    """The seq ranges rendered from the database (cache misses), in call order."""
    calls: list[tuple[int, int]] = []
    render = tree_nodes.render_chunks

    def spy(session_pk: int, low: int, high: int, chunk_labels: Any) -> dict[int, bytes]:
        calls.append((low, high))
        return render(session_pk, low, high, chunk_labels)

    monkeypatch.setattr(tree_nodes, "render_chunks", spy)
    return calls


def expected_nodes(session: Session) -> list[dict[str, Any]]:
    """The node list built the plain way, from the ORM."""
    labels = selectors.labels(session=session)
    nodes = []
    for e in Entry.objects.filter(session=session).order_by("seq"):
        node: dict[str, Any] = {"id": e.entry_id, "parentId": e.parent_id, "type": e.type}
        if e.role is not None:
            node["role"] = e.role
        if e.entry_id in labels:
            node["label"] = labels[e.entry_id]
        node["timestamp"] = e.timestamp
        nodes.append(node)
    return nodes


def nodes(session: Session) -> list[dict[str, Any]]:
    session.refresh_from_db()
    body = orjson.loads(selectors.tree_json(session=session))
    assert body["leafId"] == session.leaf_id
    return body["nodes"]  # type: ignore[no-any-return]


def grow(session: Session, n: int, author) -> list[str]:
    ids = []
    for i in range(n):
        payload = user(f"question {i}") if i % 2 == 0 else assistant(f"answer {i}")
        ids.append(services.entry_append(session=session, payload=payload, author=author).entry_id)
    return ids


def test_an_empty_session_has_no_nodes(alice):
    session = services.session_create(owner=alice)
    assert nodes(session) == []


@pytest.mark.parametrize("count", [1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 2])
def test_every_chunk_boundary_gives_the_same_list_as_the_orm(alice, count):
    session = services.session_create(owner=alice)
    grow(session, count, alice)
    assert nodes(session) == expected_nodes(session)
    cache.clear()
    assert nodes(session) == expected_nodes(session)


def test_an_append_renders_only_the_last_chunk(alice, rendered):
    session = services.session_create(owner=alice)
    grow(session, 3 * CHUNK + 1, alice)
    nodes(session)
    assert rendered == [(1, 3 * CHUNK + 1)]  # cold: one pass over everything
    rendered.clear()
    grow(session, 1, alice)
    assert nodes(session) == expected_nodes(session)
    assert rendered == [(3 * CHUNK + 1, 3 * CHUNK + 2)]
    rendered.clear()
    assert nodes(session) == expected_nodes(session)
    assert rendered == []  # nothing changed: all from the cache


def test_a_label_renders_its_targets_chunk_and_the_last(alice, rendered):
    session = services.session_create(owner=alice)
    ids = grow(session, 3 * CHUNK, alice)
    nodes(session)
    rendered.clear()
    services.label_set(session=session, target_id=ids[CHUNK], label="look here", author=alice)
    got = nodes(session)
    assert got == expected_nodes(session)
    assert {n["id"]: n.get("label") for n in got}[ids[CHUNK]] == "look here"
    # the target's chunk (its label changed) and the new last chunk (the label entry itself)
    assert rendered == [(CHUNK + 1, 2 * CHUNK), (3 * CHUNK + 1, 3 * CHUNK + 1)]
    rendered.clear()
    services.label_set(session=session, target_id=ids[CHUNK], label=None, author=alice)
    got = nodes(session)
    assert got == expected_nodes(session)
    assert "label" not in {n["id"]: n for n in got}[ids[CHUNK]]
    # the target's chunk as it was without the label is still cached; only the last is new
    assert rendered == [(3 * CHUNK + 1, 3 * CHUNK + 2)]


def test_a_label_on_a_label_or_on_the_root_shows_too(alice):
    session = services.session_create(owner=alice)
    ids = grow(session, 2, alice)
    label = services.label_set(session=session, target_id=ids[0], label="first", author=alice)
    services.label_set(session=session, target_id=label.entry_id, label="meta", author=alice)
    got = {n["id"]: n.get("label") for n in nodes(session)}
    assert got[ids[0]] == "first"
    assert got[label.entry_id] == "meta"


def test_branches_and_leaf_moves_match_the_orm(alice):
    session = services.session_create(owner=alice)
    ids = grow(session, 2 * CHUNK, alice)
    nodes(session)
    services.leaf_move(session=session, entry_id=ids[1])
    grow(session, CHUNK, alice)
    services.leaf_move(session=session, entry_id=None)
    grow(session, 1, alice)
    assert nodes(session) == expected_nodes(session)


def test_a_reused_primary_key_does_not_serve_the_old_sessions_nodes(alice):
    """A rolled-back test database hands out a primary key again: the chunk keys follow the
    content (chain hashes), so the other session's cached chunks are not used."""
    first = services.session_create(owner=alice)
    grow(first, 2 * CHUNK, alice)
    old = nodes(first)
    pk = first.pk
    services.session_delete(session=first)
    second = services.session_create(owner=alice)
    Session.objects.filter(pk=second.pk).update(id=pk)  # what a rollback would have done
    second = Session.objects.get(pk=pk)
    grow(second, 2 * CHUNK, alice)
    got = nodes(second)
    assert got == expected_nodes(second)
    assert {n["id"] for n in got}.isdisjoint({n["id"] for n in old})


def test_the_api_serves_the_cached_tree(alice, alice_client, rendered):
    session = services.session_create(owner=alice)
    grow(session, 2 * CHUNK, alice)
    first = alice_client.get(f"/api/sessions/{session.public_id}/tree").json()
    assert rendered
    rendered.clear()
    again = alice_client.get(f"/api/sessions/{session.public_id}/tree").json()
    assert again == first
    assert rendered == []
