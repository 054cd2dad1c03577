"""manage.py load_demo: the demo user and sessions, once."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from sessions_app.models import Entry, Session
from sessions_app.store import selectors

pytestmark = pytest.mark.django_db


def load(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def demo():
    load()
    return get_user_model().objects.get(username="demo")


def test_creates_the_demo_user(demo):
    client = Client()
    assert client.login(username="demo", password="demo")
    assert client.get("/api/sessions").status_code == 200


def test_sessions_have_branches_labels_compaction_model_and_thinking_changes(demo):
    sessions = Session.objects.filter(owner=demo)
    assert sessions.count() >= 2
    entries = Entry.objects.filter(session__owner=demo)
    types = Counter(entries.values_list("type", flat=True))
    assert types["compaction"] >= 1
    assert types["model_change"] >= 2
    assert types["thinking_level_change"] >= 2
    assert types["label"] >= 2
    assert types["branch_summary"] >= 1
    assert types["message"] >= 10
    for session in sessions:
        assert session.name
        assert session.leaf_id is not None
        children = Counter(session.entries.values_list("parent_id", flat=True))
        assert max(children.values()) >= 2, f"{session} has no branch"
    assert sum(len(selectors.labels(session=s)) for s in sessions) >= 2


def test_thinking_and_model_changes_reach_the_context(demo):
    for session in Session.objects.filter(owner=demo):
        if session.entries.filter(type="compaction").exists():
            context = selectors.session_context(session=session)
            assert context["messages"][0]["role"] == "compactionSummary"
            assert context["thinkingLevel"] == "high"  # the change made after the compaction
            # pi's model: the last model_change or assistant message on the path
            assert session.leaf_id is not None
            path = selectors.path_nodes(session=session, leaf_id=session.leaf_id)
            models = [
                {"provider": n.data["provider"], "modelId": n.data["modelId"]}
                if n.type == "model_change"
                else {"provider": n.data["message"]["provider"], "modelId": n.data["message"]["model"]}
                for n in path
                if n.type == "model_change" or (n.type == "message" and n.data["message"]["role"] == "assistant")
            ]
            assert {m["modelId"] for m in models} >= {"claude-sonnet-4-5", "gpt-5.1-codex"}
            assert context["model"] == models[-1]
            compaction = session.entries.get(type="compaction")
            assert json.loads(compaction.raw)["firstKeptEntryId"] == compaction.kept_from_id
            break
    else:
        pytest.fail("no demo session has a compaction")


def test_demo_sessions_are_valid_pi_files(demo, client):
    client.force_login(demo)
    for session in Session.objects.filter(owner=demo):
        response = client.get(f"/api/sessions/{session.public_id}/export.jsonl")
        lines = [json.loads(raw) for raw in b"".join(response.streaming_content).decode().splitlines()]
        assert lines[0]["type"] == "session"
        assert lines[0]["version"] == 3
        seen = set()
        for entry in lines[1:]:
            assert entry["parentId"] is None or entry["parentId"] in seen
            seen.add(entry["id"])


def test_is_idempotent(demo):
    before = (Session.objects.count(), Entry.objects.count(), get_user_model().objects.count())
    output = load()
    assert "already exist" in output
    assert (Session.objects.count(), Entry.objects.count(), get_user_model().objects.count()) == before


def test_keeps_an_existing_users_password(django_user_model):
    django_user_model.objects.create_user("demo", password="secret-pw")
    load()
    client = Client()
    assert client.login(username="demo", password="secret-pw")
    assert not client.login(username="demo", password="demo")
    assert Session.objects.filter(owner__username="demo").count() >= 2


def test_other_username(django_user_model):
    load("--username", "guest", "--password", "guest-pw")
    assert Client().login(username="guest", password="guest-pw")
    assert not django_user_model.objects.filter(username="demo").exists()


def test_no_demo_session_was_modified_before_it_was_created(demo):
    for session in Session.objects.filter(owner=demo):
        created_ms = datetime.fromisoformat(session.created).timestamp() * 1000
        assert session.modified_ms >= created_ms, f"{session}: modified before created"
