"""API fixtures: a small session built with the real services, token clients."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import Session
from sessions_app.store import services
from tests.builders import assistant, user


@pytest.fixture
def alice_session(alice) -> Session:
    """alice's session: model and thinking changes, then two user/assistant turns (leaf: last answer)."""
    session = services.session_create(owner=alice, name="Alice's session", cwd="/home/alice/project")
    for payload in (
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        user("first question"),
        assistant("first answer"),
        user("second question", ts=1_767_600_002_000),
        assistant("second answer", ts=1_767_600_003_000),
    ):
        services.entry_append(session=session, payload=payload, author=alice)
    session.refresh_from_db()
    return session


@pytest.fixture
def alice_token(alice) -> str:
    return api_token_create(user=alice, name="tests")[1]


@pytest.fixture
def token_client(alice_token) -> Client:
    """A client with no cookies that authenticates with alice's bearer token."""
    return Client(headers={"Authorization": f"Bearer {alice_token}"})
