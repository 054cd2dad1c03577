"""GET /api/sessions/{id}/usage: totals, one branch per leaf, per model; numbers computed here
straight from the file (each path walked from its leaf, no prefix sums)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client

from sessions_app.store import services
from tests.builders import assistant, user
from tests.paths import LARGE_SESSION
from tests.web.api.helpers import entry_ids, url

pytestmark = pytest.mark.django_db

KEYS = ("input", "output", "cacheRead", "cacheWrite")


def _usage(entry: dict[str, Any]) -> dict[str, Any] | None:
    message = entry.get("message") if entry.get("type") == "message" else None
    if not message or message.get("role") != "assistant":
        return None
    u = message.get("usage") or {}
    tokens = u["totalTokens"] if "totalTokens" in u else sum(u.get(k, 0) for k in KEYS)
    return {**{k: u.get(k, 0) for k in KEYS}, "totalTokens": tokens, "cost": (u.get("cost") or {}).get("total", 0)}


def expected(entries: list[dict[str, Any]], leaf_id: str | None) -> dict[str, Any]:
    """The usage body computed from the file's entries."""
    by_id = {e["id"]: e for e in entries}
    total = dict.fromkeys((*KEYS, "totalTokens", "cost"), 0)
    models: dict[tuple[str, str], list[float]] = {}
    for e in entries:
        u = _usage(e)
        if u is not None:
            for k in total:
                total[k] += u[k]
            sums = models.setdefault((e["message"]["provider"], e["message"]["model"]), [0.0, 0])
            sums[0] += u["cost"]
            sums[1] += u["totalTokens"]
    parents = {e["parentId"] for e in entries}
    branches = []
    for e in entries:
        if e["id"] in parents:
            continue
        cost, tokens, messages = 0.0, 0, 0
        at: dict[str, Any] | None = e
        while at is not None:
            if at["type"] == "message":
                messages += 1
            u = _usage(at)
            if u is not None:
                cost += u["cost"]
                tokens += u["totalTokens"]
            at = by_id.get(at["parentId"])
        branches.append({"leafId": e["id"], "cost": cost, "totalTokens": tokens, "messages": messages,
                         "current": e["id"] == leaf_id})  # fmt: skip
    by_model = [{"provider": p, "model": m, "cost": c, "totalTokens": t} for (p, m), (c, t) in models.items()]
    return {"total": total, "branches": branches, "byModel": by_model}


def assert_matches(body: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(body) == {"total", "branches", "byModel"}
    assert body["total"] == pytest.approx(want["total"])
    assert len(body["branches"]) == len(want["branches"])
    for got, exp in zip(body["branches"], want["branches"], strict=True):
        assert got == {**exp, "cost": pytest.approx(exp["cost"])}
    key = lambda m: (m["provider"], m["model"])  # noqa: E731
    assert sorted(body["byModel"], key=key) == [
        {**m, "cost": pytest.approx(m["cost"])} for m in sorted(want["byModel"], key=key)
    ]


def _import(client: Client, data: bytes) -> str:
    response = client.post(url(suffix="/import"), {"file": SimpleUploadedFile("s.jsonl", data)})
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


@pytest.mark.parametrize("seed", [3, 12])
def test_usage_of_a_generated_branched_session(alice_client, generated, seed):
    data = generated(entries=1200, seed=seed, branch_prob=0.25, labels=10, compactions=2, branch_summary_prob=0.3)
    entries = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = _import(alice_client, data)
    body = alice_client.get(url(session_id, "/usage")).json()
    want = expected(entries, entries[-1]["id"])
    assert len(want["branches"]) > 5 and want["total"]["cost"] > 0 and len(want["byModel"]) > 1
    assert_matches(body, want)
    assert sum(b["current"] for b in body["branches"]) == 1
    # Warm (cached chunks) gives the same; so does the session row's running total.
    assert alice_client.get(url(session_id, "/usage")).json() == body
    row = alice_client.get(url(session_id)).json()
    assert row["cost"] == pytest.approx(want["total"]["cost"])


def test_usage_of_pis_fixture(alice_client):
    data = LARGE_SESSION.read_bytes()
    lines = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = _import(alice_client, data)
    tree = alice_client.get(url(session_id, "/tree")).json()
    # An old (v1) file: piweb gives the entries their ids, in file order, on one chain.
    assert len(tree["nodes"]) == len(lines)
    entries = [{**e, "id": n["id"], "parentId": n["parentId"]} for e, n in zip(lines, tree["nodes"], strict=True)]
    body = alice_client.get(url(session_id, "/usage")).json()
    want = expected(entries, tree["leafId"])
    assert want["total"]["cost"] > 1 and len(want["byModel"]) >= 2
    assert_matches(body, want)
    row = alice_client.get(url(session_id)).json()
    assert (row["cost"], row["totalTokens"]) == (pytest.approx(want["total"]["cost"]), want["total"]["totalTokens"])


def test_a_fork_costs_what_its_path_did(alice, alice_client, generated):
    data = generated(entries=400, seed=5, branch_prob=0.3)
    entries = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = _import(alice_client, data)
    branch = expected(entries, None)["branches"][0]
    fork = alice_client.post(url(session_id, "/fork"), {"entryId": branch["leafId"]}, content_type="application/json")
    assert fork.status_code == 201
    assert fork.json()["cost"] == pytest.approx(branch["cost"]) and fork.json()["totalTokens"] == branch["totalTokens"]
    body = alice_client.get(url(fork.json()["id"], "/usage")).json()
    assert body["total"]["cost"] == pytest.approx(branch["cost"])


def test_every_leaf_is_a_branch_labels_too(alice, alice_client):
    session = services.session_create(owner=alice, name="s")
    paid = {"input": 10, "output": 20, "cacheRead": 5, "cacheWrite": 0, "totalTokens": 35, "cost": {"total": 0.25}}
    first = services.entry_append(session=session, payload=user("q"), author=alice)
    answer = services.entry_append(session=session, payload=assistant("a", usage=paid), author=alice)
    services.leaf_move(session=session, entry_id=first.entry_id)
    other = services.entry_append(
        session=session,
        payload=assistant("b", model="claude-opus-4-5", usage={**paid, "cost": {"total": 1.5}}),
        author=alice,
    )
    label = services.label_set(session=session, target_id=answer.entry_id, label="good", author=alice)
    session.refresh_from_db()
    ids = entry_ids(session)
    body = alice_client.get(url(session.public_id, "/usage")).json()
    leaves = {b["leafId"]: b for b in body["branches"]}
    assert list(leaves) == [answer.entry_id, label.entry_id]  # the label, a child of `other`, is a leaf
    assert label.entry_id == session.leaf_id == ids[-1]
    assert leaves[label.entry_id]["current"] and not leaves[answer.entry_id]["current"]
    assert leaves[label.entry_id]["messages"] == 2 and leaves[answer.entry_id]["messages"] == 2
    assert other.entry_id not in leaves
    assert leaves[label.entry_id]["cost"] == 1.5 and leaves[answer.entry_id]["cost"] == 0.25
    assert leaves[label.entry_id]["totalTokens"] == 35
    assert body["total"] == {
        "input": 20,
        "output": 40,
        "cacheRead": 10,
        "cacheWrite": 0,
        "totalTokens": 70,
        "cost": 1.75,
    }
    assert body["byModel"] == [
        {"provider": "anthropic", "model": "claude-opus-4-5", "cost": 1.5, "totalTokens": 35},
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "cost": 0.25, "totalTokens": 35},
    ]
    assert (session.cost, session.total_tokens) == (1.75, 70)  # the row's running total, kept by each append


def test_outsiders_get_404(alice_session, bob_client, alice_client):
    assert bob_client.get(url(alice_session.public_id, "/usage")).status_code == 404
    assert Client().get(url(alice_session.public_id, "/usage")).status_code in (401, 404)
    assert alice_client.get(url(alice_session.public_id, "/usage")).status_code == 200


def test_usage_of_an_empty_session(alice_client):
    session_id = alice_client.generic("POST", url()).json()["id"]
    body = alice_client.get(url(session_id, "/usage")).json()
    assert body == {
        "total": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": 0.0},
        "branches": [],
        "byModel": [],
    }


def test_a_line_the_database_cannot_pick_from_is_read_whole(alice, alice_client, alice_session, monkeypatch):
    """SQLite picks the usage fields out of each line; a line its JSON reader refuses is read whole,
    as PostgreSQL reads every line."""
    from sessions_app.store import usage_facts

    want = alice_client.get(url(alice_session.public_id, "/usage")).json()
    caches["default"].clear()
    if connection.vendor == "sqlite":
        monkeypatch.setitem(usage_facts._MESSAGE, "sqlite", "json_extract('{', '$.a')")  # malformed JSON
    else:
        assert usage_facts._MESSAGE[connection.vendor] == "raw"
    assert alice_client.get(url(alice_session.public_id, "/usage")).json() == want
    assert len(want["branches"]) == 1 and want["total"]["totalTokens"] == 6
