"""Every endpoint x every role x (own team, other team, someone else's personal session) + anonymous.

One table says what each endpoint needs (permissions.CAPABILITIES says what each role has); the cases
are generated from it. Allowed: the endpoint's success status. Refused: 404 without access, 403 with
read access but not the capability, 401 (API) or a redirect to sign-in (UI) when signed out; and
nothing changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.access import permissions
from sessions_app.access.permissions import Capability, Role
from sessions_app.errors import SessionsError
from sessions_app.live import compacting, streaming, turns
from sessions_app.models import (
    Entry,
    Membership,
    ReviewComment,
    ReviewRequest,
    Session,
    ShareLink,
    StreamingTurn,
    Verdict,
)
from tests.worlds import ROLES, World

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str  # {sid}, entry keys ({u1}, {a1}, {u2}, {a2}), {turn}
    need: Capability
    ok: tuple[int, ...] = (200,)
    data: dict[str, Any] | None = None
    setup: str | None = None  # "turn": a queued turn to stop

    @property
    def kind(self) -> str:
        return self.name.split(".")[0]


USER_HI = {"role": "user", "content": "hi"}
S = "/sessions/{sid}"
A = "/api/sessions/{sid}"
ENDPOINTS: list[Endpoint] = [
    # REST API
    Endpoint("api.detail", "get", A, "read"),
    Endpoint("api.rename", "patch", A, "manage", data={"name": "renamed"}),
    Endpoint("api.delete", "delete", A, "delete", ok=(204,)),
    Endpoint("api.export", "get", A + "/export.jsonl", "read"),
    Endpoint("api.export_html", "get", A + "/export.html", "read"),
    Endpoint("api.context", "get", A + "/context", "read"),
    Endpoint("api.context_at", "get", A + "/context?leaf={a1}", "read"),
    Endpoint("api.tree", "get", A + "/tree", "read"),
    Endpoint("api.compare", "get", A + "/compare?a={a1}&b={a2}", "read"),
    Endpoint("api.usage", "get", A + "/usage", "read"),
    Endpoint("api.entry_create", "post", A + "/entries", "chat", (201,), {"type": "message", "message": USER_HI}),
    Endpoint("api.leaf", "put", A + "/leaf", "branch", data={"entryId": "{a1}"}),
    Endpoint("api.label", "post", A + "/labels", "label", (201,), {"targetId": "{a1}", "label": "x"}),
    Endpoint("api.fork", "post", A + "/fork", "fork", (201,), {"entryId": "{a1}"}),
    Endpoint("api.share", "post", A + "/shares", "share", (201,), {"entryId": "{a1}"}),
    Endpoint("api.import", "post", "/api/sessions/import", "import", (201,)),
    Endpoint("api.comments", "get", A + "/comments", "read"),
    Endpoint("api.comment_create", "post", A + "/comments", "review", (201,), {"entryId": "{a1}", "body": "hm"}),
    Endpoint("api.reviews", "get", A + "/reviews", "read"),
    Endpoint("api.verdict", "post", A + "/reviews", "review", (201,), {"entryId": "{a1}", "verdict": "flagged"}),
    # 409 on a personal session: requests are for team sessions only (tests/access/test_reviews.py)
    Endpoint("api.review_request", "post", A + "/review-requests", "review", (201, 409), {"reviewer": "editor"}),
    # htmx UI
    Endpoint("view.detail", "get", S + "/", "read"),
    Endpoint("view.tree_gap", "get", S + "/tree/gap/?node={u1}", "read"),
    Endpoint("view.tree_branch", "get", S + "/tree/branch/?node={a1}", "read"),
    Endpoint("view.earlier", "get", S + "/conversation/earlier/?before={a1}", "read"),
    Endpoint("view.output", "get", S + "/entries/{a1}/output/", "read"),
    Endpoint("view.image", "get", S + "/entries/{u1}/image/1/", "read"),
    # a1 holds no tool call: 404 to everyone (the call view itself: tests/web/pages/test_files_changed.py)
    Endpoint("view.call", "get", S + "/entries/{a1}/calls/0/", "read", (404,)),
    Endpoint("view.files", "get", S + "/files/?leaf={a2}", "read"),
    Endpoint("view.compare", "get", S + "/compare/?a={a1}&b={a2}", "read"),
    Endpoint("view.usage", "get", S + "/usage/", "read"),
    Endpoint("view.context", "get", S + "/context/?entry={a1}", "read"),
    Endpoint("view.export_jsonl", "get", S + "/export.jsonl", "read"),
    Endpoint("view.export_html", "get", S + "/export.html", "read"),
    Endpoint("view.continue", "post", S + "/continue/", "branch", (302,), {"entry": "{a1}"}),
    Endpoint("view.label", "post", S + "/label/", "label", (302,), {"entry": "{a1}", "label": "x"}),
    Endpoint("view.fork", "post", S + "/fork/", "fork", (302,), {"entry": "{a1}"}),
    Endpoint("view.append", "post", S + "/append/", "chat", (302,), {"text": "hi"}),
    Endpoint("view.rename", "post", S + "/rename/", "manage", (302,), {"name": "renamed"}),
    Endpoint("view.delete_confirm", "get", S + "/delete/", "delete"),
    Endpoint("view.delete", "post", S + "/delete/", "delete", (302,), {}),
    Endpoint("view.share", "post", S + "/share/", "share", (200,), {"entry": "{a1}"}),
    Endpoint("view.import", "post", "/import/", "import"),
    Endpoint("view.comment", "post", S + "/comments/", "review", (302,), {"entry": "{a1}", "body": "hm"}),
    Endpoint("view.verdict", "post", S + "/verdicts/", "review", (302,), {"entry": "{a1}", "verdict": "flagged"}),
    # No such comment: 404 to everyone (who may resolve: tests/web/pages/test_review_threads.py)
    Endpoint("view.comment_resolve", "post", S + "/comments/resolve/", "read", (404,), {"comment": "999999"}),
    # live chat commands (htmx: 204, or a fresh composer)
    Endpoint("chat.send", "post", S + "/chat/send/", "chat", data={"text": "hi"}),
    Endpoint("chat.edit", "post", S + "/chat/edit/", "chat", (204,), {"entry": "{u2}", "text": "again"}),
    Endpoint("chat.regenerate", "post", S + "/chat/regenerate/", "chat", (204,), {"entry": "{a2}"}),
    Endpoint("chat.continue", "post", S + "/chat/continue/", "chat", (204,), {"entry": "{a2}"}),
    Endpoint("chat.stop", "post", S + "/chat/stop/", "chat", (204,), {"turn": "{turn}"}, setup="turn"),
    Endpoint("chat.model", "post", S + "/chat/model/", "chat", (204,), {"model": "piweb-demo"}),
    Endpoint("chat.thinking", "post", S + "/chat/thinking/", "chat", (204,), {"level": "high"}),
    Endpoint("chat.compact", "post", S + "/chat/compact/", "chat", (400,), {}),  # 400: too small to compact
    Endpoint("chat.navigate", "post", S + "/chat/navigate/", "branch", (200,), {"entry": "{a1}"}),
]

SCOPES = ("team", "other", "personal")  # own team's session, another team's, someone's personal one


def expected(ep: Endpoint, who: str, scope: str) -> int | tuple[int, ...]:
    if who == "anonymous":
        return 401 if ep.kind == "api" else 302
    if who == "owner":
        return ep.ok
    if ep.name.endswith(".import") and scope == "personal":
        return ep.ok  # no team given: into the user's own personal space
    if scope != "team":
        return 404
    if not permissions.can(Role(who), ep.need):
        return 403
    return ep.ok


CASES = [
    *[(ep, role, scope) for ep in ENDPOINTS for role in ROLES for scope in SCOPES],
    *[(ep, "owner", "personal") for ep in ENDPOINTS],
    *[(ep, "anonymous", "team") for ep in ENDPOINTS],
]


def state(world: World) -> tuple[Any, ...]:
    """Everything a refused request must leave as it was."""
    rows = Session.objects.order_by("pk").values_list("public_id", "leaf_id", "name", "last_seq", "deleting", "team_id")
    return (
        list(rows),
        Entry.objects.count(),
        StreamingTurn.objects.count(),
        ShareLink.objects.count(),
        list(Membership.objects.order_by("pk").values_list("team_id", "user_id", "role")),
        ReviewComment.objects.count(),
        Verdict.objects.count(),
        ReviewRequest.objects.count(),
    )


def send(world: World, ep: Endpoint, who: str, scope: str) -> Any:
    session = world.sessions[scope]
    values = {"sid": session.public_id, **world.ids[scope]}
    if ep.setup == "turn":
        values["turn"] = str(turns.chat_send(session=session, text="go", author=session.owner).public_id)
    path = ep.path.format(**values)
    data = {k: (v.format(**values) if isinstance(v, str) else v) for k, v in (ep.data or {}).items()}
    client = world.client(None if who == "anonymous" else who, **({"HX-Request": "true"} if ep.kind == "chat" else {}))
    before = state(world)
    if ep.name.endswith(".import"):
        team = {"team": session.team.public_id} if session.team else {}
        upload = SimpleUploadedFile("new.jsonl", NEW_FILE)
        response = client.post(path, {"files" if ep.kind == "view" else "file": upload, **team})
    elif ep.kind == "api" and ep.method != "get":
        response = getattr(client, ep.method)(path, data or None, content_type="application/json")
    elif ep.method == "get":
        response = client.get(path)
    else:
        response = client.post(path, data)
    return before, response


NEW_FILE = (
    b'{"type":"session","version":3,"id":"11111111-2222-3333-4444-555555555555","timestamp":"2026-01-05T10:00:00.000Z","cwd":"/x"}\n'
    b'{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-05T10:00:01.000Z",'
    b'"message":{"role":"user","content":"imported","timestamp":1767607201000}}\n'
)


@pytest.fixture(autouse=True)
def _no_turns_run(monkeypatch, settings):
    """Chat commands queue turns; nothing runs them here, nor compacts (the chat tests do, on a
    transactional database)."""

    async def dispatch(turn: Any) -> None:
        return None

    async def compact(**kwargs: Any) -> None:  # past the access check; the chat tests compact for real
        raise SessionsError("Nothing to compact (session too small)")

    monkeypatch.setattr(streaming, "dispatch", dispatch)

    async def navigate(**kwargs: Any) -> Any:
        return SimpleNamespace(editor_text="")

    monkeypatch.setattr(compacting, "chat_compact", compact)
    monkeypatch.setattr(turns, "navigate", navigate)
    settings.PIWEB_JANITOR = False


@pytest.mark.parametrize(("ep", "who", "scope"), CASES, ids=[f"{ep.name}-{who}-{scope}" for ep, who, scope in CASES])
def test_matrix(world, ep, who, scope):
    want = expected(ep, who, scope)
    before, response = send(world, ep, who, scope)
    if isinstance(want, tuple):
        assert response.status_code in want, response.content[:300]
        return
    assert response.status_code == want, response.content[:300]
    if want == 302:
        assert response["Location"].startswith("/accounts/login/")
    if want == 404 and ep.kind == "api" and not ep.name.endswith(".import"):
        assert response.json() == {"message": "Session not found", "extra": {}}
    assert state(world) == before


def _shape(path: str) -> str:
    """A path with every parameter as {}: comparable between URL patterns and table rows."""
    return re.sub(r"<[^>]+>|\{[^}]+\}|(?<=/)\d+(?=/)", "{}", path.split("?")[0])


def test_the_table_covers_every_ui_route():
    """A new session page or command must get a row in ENDPOINTS (and so a capability)."""
    from sessions_app.web import chat_urls, settings_urls, urls
    from tests.access.test_teams import TEAM_ROUTES

    rows = {_shape(ep.path) for ep in ENDPOINTS}
    team_rows = {_shape(r[2]) for r in TEAM_ROUTES}
    for pattern in [*urls.urlpatterns, *chat_urls.urlpatterns, *settings_urls.urlpatterns]:
        route = "/" + str(pattern.pattern)
        if route.startswith("/sessions/<str:public_id>"):
            assert _shape(route) in rows, f"{route} has no row in ENDPOINTS"
        elif route.startswith("/teams/<str:public_id>"):
            assert _shape(route) in team_rows, f"{route} has no row in test_teams.TEAM_ROUTES"


def test_the_table_covers_every_api_operation():
    from sessions_app.web import api, review_api

    rows = {(ep.method.upper(), _shape(ep.path)) for ep in ENDPOINTS if ep.kind == "api"}
    for prefix, router in (("/api/sessions", api.router), ("/api", review_api.router)):
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for method in operation.methods:
                    if "{session_id}" in path:
                        assert (method, _shape(prefix + path)) in rows, f"{method} {path} has no row"
