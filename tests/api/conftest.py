"""API fixtures: a small session built with the real services, generated pi files, token clients."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from sessions_app import services
from sessions_app.auth import api_token_create
from sessions_app.models import Session
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


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., bytes]:
    """make(entries, seed, **options) -> a pi v3 session file from gen_session.py (cached)."""
    cache: dict[tuple[Any, ...], bytes] = {}
    folder = tmp_path_factory.mktemp("generated")

    def make(entries: int = 40, seed: int = 1, **options: Any) -> bytes:
        key = (entries, seed, *sorted(options.items()))
        if key not in cache:
            out = folder / f"session-{len(cache)}.jsonl"
            args = [sys.executable, str(GEN_SESSION), "--entries", str(entries), "--seed", str(seed), "--out", str(out)]
            for name, value in options.items():
                args += [f"--{name.replace('_', '-')}", str(value)]
            subprocess.run(args, check=True, capture_output=True)
            cache[key] = Path(out).read_bytes()
        return cache[key]

    return make


@pytest.fixture
def alice_token(alice) -> str:
    return api_token_create(user=alice, name="tests")[1]


@pytest.fixture
def token_client(alice_token) -> Client:
    """A client with no cookies that authenticates with alice's bearer token."""
    return Client(headers={"Authorization": f"Bearer {alice_token}"})
