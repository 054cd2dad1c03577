"""Scenarios built with the real services: a branched conversation, and a world of teams and roles."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.test import Client

from sessions_app.access import teams
from sessions_app.models import Session, Team
from sessions_app.store import services
from tests.builders import assistant, user


@dataclass
class Tree:
    session: Session
    ids: dict[str, str]


def branchy_tree(alice: User) -> Tree:
    """u1 - a1 - u2a - a2a - tool call/result - a3a (leaf, first branch)
                \\ u2b - a2b   (second branch, newer)
    The session leaf is put back on a3a; u1 carries a label."""
    s = services.session_create(owner=alice, name="Branchy session", cwd="/work/demo")
    ids: dict[str, str] = {}

    def add(key: str, payload: dict[str, Any], parent: str | None = None) -> None:
        kw: dict[str, Any] = {"parent_id": ids[parent]} if parent else {}
        ids[key] = services.entry_append(session=s, payload=payload, author=alice, **kw).entry_id

    add("model", {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    add("u1", user("How do I **parse** JSONL?", 1_767_600_000_000))
    add(
        "a1",
        assistant("Read it line by line:\n\n```python\nfor line in f:\n    json.loads(line)\n```", 1_767_600_001_000),
    )
    add("u2a", user("And in Rust?", 1_767_600_002_000))
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "cargo new demo"}}
    add("a2a", {"type": "message", "message": {"role": "assistant", "content": [call], "provider": "anthropic",
                                               "model": "claude-sonnet-4-5", "api": "anthropic-messages",
                                               "stopReason": "toolUse", "timestamp": 1_767_600_003_000}})  # fmt: skip
    long_output = "\n".join(f"line {k}" for k in range(200))
    add("tool", {"type": "message", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                                                "content": [{"type": "text", "text": long_output}], "isError": False,
                                                "timestamp": 1_767_600_004_000}})  # fmt: skip
    add("a3a", assistant("Use serde_json.", 1_767_600_005_000))
    add("u2b", user("And in Go?", 1_767_600_006_000), parent="a1")
    add("a2b", assistant("Use bufio.Scanner.", 1_767_600_007_000))
    services.label_set(session=s, target_id=ids["u1"], label="question", author=alice)
    services.leaf_move(session=s, entry_id=ids["a3a"])
    s.refresh_from_db()
    return Tree(s, ids)


def detail(tree: Tree, **params: str) -> str:
    url = f"/sessions/{tree.session.public_id}/"
    return url + ("?" + urlencode(params) if params else "")


ROLES = ("viewer", "reviewer", "editor", "admin")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


@dataclass
class World:
    users: dict[str, User]
    core: Team
    other: Team
    sessions: dict[str, Session]  # "team", "other", "personal"
    ids: dict[str, dict[str, str]] = field(default_factory=dict)  # per session: key -> entry id

    def client(self, name: str | None, **headers: str) -> Client:
        client = Client(headers=headers)
        if name is not None:
            client.force_login(self.users[name])
        return client


def build_session(owner: User, name: str) -> tuple[Session, dict[str, str]]:
    """session_info (the name), model change, u1 (text and an image), a1, u2, a2 (leaf)."""
    s = services.session_create(owner=owner, name=name, cwd="/work")
    s.refresh_from_db()
    ids: dict[str, str] = {"info": s.leaf_id} if s.leaf_id else {}  # the session_info the name made

    def add(key: str, payload: dict[str, Any]) -> None:
        ids[key] = services.entry_append(session=s, payload=payload, author=owner).entry_id

    add("model", {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    content = [{"type": "text", "text": "see"}, image]
    add("u1", {"type": "message", "message": {"role": "user", "content": content, "timestamp": 1_767_600_000_000}})
    add("a1", assistant("first answer", 1_767_600_001_000))
    add("u2", user("second question", 1_767_600_002_000))
    add("a2", assistant("second answer", 1_767_600_003_000))
    s.refresh_from_db()
    return s, ids


def make_world(django_user_model: type[User]) -> World:
    names = (*ROLES, "owner", "other_admin")
    users = {name: django_user_model.objects.create_user(name, password=f"{name}-pw") for name in names}
    core = teams.team_create(name="Core", creator=users["admin"])
    for role in ROLES[:3]:
        teams.member_invite(team=core, username=role, role=role, actor=users["admin"])
    other = teams.team_create(name="Other", creator=users["other_admin"])
    sessions: dict[str, Session] = {}
    ids: dict[str, dict[str, str]] = {}
    for key, owner, team in (("team", "admin", core), ("other", "other_admin", other), ("personal", "owner", None)):
        sessions[key], ids[key] = build_session(users[owner], f"{key} session")
        if team is not None:
            teams.session_move_to_team(session=sessions[key], team=team, actor=users[owner])
    return World(users=users, core=core, other=other, sessions=sessions, ids=ids)
