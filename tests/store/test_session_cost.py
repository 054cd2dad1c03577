"""Session.cost and total_tokens: kept by the listing on every write, and filled for sessions stored
before them by migration 0018_session_cost's data step."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps

from sessions_app.models import Session
from sessions_app.store import services
from sessions_app.store.importing import pipeline
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db

fill = importlib.import_module("sessions_app.migrations.0018_session_cost")._fill


def file_totals(data: bytes) -> tuple[float, int]:
    cost, tokens = 0.0, 0
    for raw in data.decode().splitlines()[1:]:
        e = json.loads(raw)
        if e["type"] == "message" and e["message"]["role"] == "assistant":
            cost += e["message"]["usage"]["cost"]["total"]
            tokens += e["message"]["usage"]["totalTokens"]
    return cost, tokens


@pytest.mark.parametrize("builder", ["process", "worker"])
def test_import_sums_every_assistant_message(alice, generated, builder):
    data = generated(entries=500, seed=4, branch_prob=0.2)
    session = pipeline.session_import(owner=alice, data=data, builder=builder).session
    cost, tokens = file_totals(data)
    assert cost > 0
    assert session.cost == pytest.approx(cost) and session.total_tokens == tokens
    session.refresh_from_db()
    assert session.cost == pytest.approx(cost) and session.total_tokens == tokens


def test_a_grown_file_adds_only_its_new_entries(alice, generated):
    data = generated(entries=300, seed=6)
    lines = data.splitlines(keepends=True)
    pipeline.session_import(owner=alice, data=b"".join(lines[:150]))
    session = pipeline.session_import(owner=alice, data=data).session
    assert session.cost == pytest.approx(file_totals(data)[0])


def test_the_migration_fills_existing_rows(alice):
    s = services.session_create(owner=alice, name="old")
    services.entry_append(session=s, payload=user("q"), author=alice)
    usage = {"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 7, "cost": {"total": 0.5}}
    services.entry_append(session=s, payload=assistant("a", usage=usage), author=alice)
    services.entry_append(session=s, payload=assistant("b", usage={**usage, "totalTokens": 9}), author=alice)
    empty = services.session_create(owner=alice, name="empty")
    Session.objects.update(cost=0, total_tokens=0)  # as the columns' defaults leave older rows
    fill(apps, None)
    s.refresh_from_db()
    empty.refresh_from_db()
    assert (s.cost, s.total_tokens) == (1.0, 16)
    assert (empty.cost, empty.total_tokens) == (0.0, 0)
