"""GET /api/sessions/{id}/compare: two branches from their common ancestor, as GET /tree's nodes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions_app.models import Session
from sessions_app.store import services, shares
from tests.builders import assistant, user
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db


@pytest.fixture
def forked(alice) -> tuple[Session, dict[str, str]]:
    """r(user) - q(assistant) - x1(user) - x2(assistant)
                              \\ y1(user) - y2(assistant) - y3(user)
    and a second root z (a new root entry)."""
    session = services.session_create(owner=alice, name="forked")
    ids: dict[str, str] = {}

    def add(name: str, payload: dict[str, Any], parent: str | None) -> None:
        entry = services.entry_append(session=session, payload=payload, parent_id=parent, author=alice)
        ids[name] = entry.entry_id

    add("r", user("root question", ts=1_765_000_000_000), None)
    add("q", assistant("root answer", ts=1_765_000_001_000), ids["r"])
    add("x1", user("try it one way", ts=1_765_000_002_000), ids["q"])
    add("x2", assistant("done the first way", ts=1_765_000_003_000), ids["x1"])
    add("y1", user("try it another way", ts=1_765_000_004_000), ids["q"])
    add("y2", assistant("done the second way", ts=1_765_000_005_000), ids["y1"])
    add("y3", user("and then?", ts=1_765_000_006_000), ids["y2"])
    add("z", user("a new root", ts=1_765_000_007_000), None)
    services.label_set(session=session, target_id=ids["y2"], label="second", author=alice)
    session.refresh_from_db()
    return session, ids


def compare(client: Client, session: Session, a: str, b: str) -> Any:
    return client.get(url(session.public_id, "/compare"), {"a": a, "b": b})


def tree_nodes(client: Client, session: Session) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in client.get(url(session.public_id, "/tree")).json()["nodes"]}


def test_two_branches_from_where_they_part_as_tree_nodes(alice_client, forked):
    session, ids = forked
    response = compare(alice_client, session, ids["x2"], ids["y3"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"ancestorId", "a", "b"}
    assert body["ancestorId"] == ids["q"]
    nodes = tree_nodes(alice_client, session)
    assert body["a"] == [nodes[ids["x1"]], nodes[ids["x2"]]]
    assert body["b"] == [nodes[ids["y1"]], nodes[ids["y2"]], nodes[ids["y3"]]]
    assert body["b"][1]["label"] == "second"  # the same node objects: labels resolved on them


def test_an_ancestor_of_b_leaves_side_a_empty(alice_client, forked):
    session, ids = forked
    body = compare(alice_client, session, ids["q"], ids["y2"]).json()
    assert body["ancestorId"] == ids["q"]
    assert body["a"] == []
    assert [n["id"] for n in body["b"]] == [ids["y1"], ids["y2"]]
    reverse = compare(alice_client, session, ids["y2"], ids["q"]).json()
    assert reverse["ancestorId"] == ids["q"]
    assert [n["id"] for n in reverse["a"]] == [ids["y1"], ids["y2"]]
    assert reverse["b"] == []


def test_the_same_entry_twice_gives_two_empty_sides(alice_client, forked):
    session, ids = forked
    assert compare(alice_client, session, ids["x1"], ids["x1"]).json() == {"ancestorId": ids["x1"], "a": [], "b": []}


def test_different_roots_give_no_ancestor_and_both_whole_paths(alice_client, forked):
    session, ids = forked
    body = compare(alice_client, session, ids["x2"], ids["z"]).json()
    assert body["ancestorId"] is None
    assert [n["id"] for n in body["a"]] == [ids["r"], ids["q"], ids["x1"], ids["x2"]]
    assert [n["id"] for n in body["b"]] == [ids["z"]]


@pytest.mark.parametrize("side", ["a", "b"])
def test_an_unknown_id_is_a_404_that_names_it(alice_client, forked, side):
    session, ids = forked
    params = {"a": ids["x2"], "b": ids["y3"], side: "nope-1234"}
    response = alice_client.get(url(session.public_id, "/compare"), params)
    assert response.status_code == 404
    assert "nope-1234" in response.json()["message"]


def test_both_ids_are_required(alice_client, forked):
    session, ids = forked
    assert alice_client.get(url(session.public_id, "/compare"), {"a": ids["x2"]}).status_code == 422


def test_outsiders_get_a_404_and_anonymous_callers_a_401(bob_client, forked):
    session, ids = forked
    response = compare(bob_client, session, ids["x2"], ids["y3"])
    assert response.status_code == 404
    assert ids["x1"] not in response.content.decode()
    assert compare(Client(), session, ids["x2"], ids["y3"]).status_code == 401


def test_a_share_link_does_not_open_the_api(alice, forked):
    session, ids = forked
    _, token = shares.share_create(session=session, user=alice)
    client = Client()
    assert client.get(f"/s/{token}/").status_code == 200  # the link itself works
    assert compare(client, session, ids["x2"], ids["y3"]).status_code == 401
    assert client.get(f"/s/{token}/compare/", {"a": ids["x2"], "b": ids["y3"]}).status_code == 404


def _paths_from_file(lines: list[dict[str, Any]], a: str, b: str) -> tuple[str | None, list[str], list[str]]:
    """The expected answer, worked out from the file's lines alone (parent pointers, no piweb code)."""
    parents = {e["id"]: e["parentId"] for e in lines}

    def path(leaf: str) -> list[str]:
        out: list[str] = []
        node: str | None = leaf
        while node is not None:
            out.append(node)
            node = parents.get(node)
        return out[::-1]

    pa, pb = path(a), path(b)
    shared = [x for x, y in zip(pa, pb, strict=False) if x == y]
    if not shared:
        return None, pa, pb
    return shared[-1], pa[len(shared) :], pb[len(shared) :]


def test_a_generated_branched_session_matches_the_file(alice_client, generated):
    data = generated(entries=300, seed=5, branch_prob=0.3, labels=8)
    lines = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)}).json()["id"]
    by_id = {e["id"]: e for e in lines}
    has_kids = {e["parentId"] for e in lines}
    leaves = [e["id"] for e in lines if e["id"] not in has_kids]
    assert len(leaves) >= 3
    pairs = [(leaves[0], leaves[-1]), (leaves[1], leaves[2]), (lines[10]["id"], leaves[-1])]
    for a, b in pairs:
        body = alice_client.get(url(session_id, "/compare"), {"a": a, "b": b}).json()
        ancestor, side_a, side_b = _paths_from_file(lines, a, b)
        assert body["ancestorId"] == ancestor
        assert [n["id"] for n in body["a"]] == side_a
        assert [n["id"] for n in body["b"]] == side_b
        for node in body["a"] + body["b"]:
            entry = by_id[node["id"]]
            assert (node["parentId"], node["type"], node["timestamp"]) == (
                entry["parentId"],
                entry["type"],
                entry["timestamp"],
            )
            assert node.get("role") == (entry["message"]["role"] if entry["type"] == "message" else None)
