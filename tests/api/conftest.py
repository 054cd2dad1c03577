"""API fixtures: a small session built with the real services, generated pi files, token clients."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions_app.access.api_tokens import api_token_create
from sessions_app.models import Session
from sessions_app.store import services
from tests.conftest import BASELINE_SRC

GEN_SESSION = BASELINE_SRC / "gen_session.py"


def user_message(text: str, ts: int = 1_767_600_000_000) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts},
    }


def assistant_message(text: str, ts: int = 1_767_600_001_000) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "stopReason": "stop",
            "timestamp": ts,
        },
    }


def url(session_id: str | None = None, suffix: str = "") -> str:
    return "/api/sessions" + (f"/{session_id}" if session_id else "") + suffix


@pytest.fixture
def alice_session(alice) -> Session:
    """alice's session: model and thinking changes, then two user/assistant turns (leaf: last answer)."""
    session = services.session_create(owner=alice, name="Alice's session", cwd="/home/alice/project")
    for payload in (
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        user_message("first question"),
        assistant_message("first answer"),
        user_message("second question", ts=1_767_600_002_000),
        assistant_message("second answer", ts=1_767_600_003_000),
    ):
        services.entry_append(session=session, payload=payload, author=alice)
    session.refresh_from_db()
    return session


def entry_ids(session: Session) -> list[str]:
    """The session's entry ids in file order."""
    return list(session.entries.order_by("seq").values_list("entry_id", flat=True))


@pytest.fixture
def alice_token(alice) -> str:
    return api_token_create(user=alice, name="tests")[1]


@pytest.fixture
def token_client(alice_token) -> Client:
    """A client with no cookies that authenticates with alice's bearer token."""
    return Client(headers={"Authorization": f"Bearer {alice_token}"})
