"""Live-chat commands: thin, CSRF-protected POST views calling sessions_app.live.turns.

They are async so that a turn can start in this process (in-memory channel layer) once the command
has committed; with Redis, streaming.dispatch hands the turn to a worker instead. htmx requests get
204 (the websocket brings every change) except send, which returns a fresh composer; plain form
posts are redirected back to the session page.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from sessions_app.access.permissions import Capability
from sessions_app.errors import InvalidRequest
from sessions_app.live import compacting, streaming, turns
from sessions_app.llm.registry import registry_from_settings
from sessions_app.models import Session
from sessions_app.store import selectors
from sessions_app.web import forms

ChatView = Callable[[HttpRequest, Session, User], Awaitable[HttpResponse]]


def chat_view(func: ChatView, need: Capability = "chat") -> Callable[..., Any]:
    """404 for a session the user cannot see, 403 without `need` (access.py; chat_view_needing)."""

    @functools.wraps(func)
    async def wrapper(request: HttpRequest, public_id: str) -> HttpResponse:
        user = await request.auser()
        assert isinstance(user, User)
        session = await sync_to_async(selectors.session_get_for_user)(user=user, public_id=public_id, need=need)
        return await func(request, session, user)

    return require_POST(login_required(wrapper))


def chat_view_needing(need: Capability) -> Callable[[ChatView], Callable[..., Any]]:
    return lambda func: chat_view(func, need)


def _done(request: HttpRequest, session: Session) -> HttpResponse:
    if request.headers.get("HX-Request") == "true":
        return HttpResponse(status=204)
    return redirect("sessions:detail", session.public_id)


def _field(request: HttpRequest, name: str, *, required: bool = True, limit: int = 200) -> str:
    value = request.POST.get(name, "")
    if required and not value.strip():
        raise InvalidRequest(f"'{name}' is required", field=name)
    if len(value) > limit:
        raise InvalidRequest(f"'{name}' is too long", field=name)
    return value


def _entry_id(request: HttpRequest) -> str:
    """The form's `entry`, exactly as sent (an id may be spaces: forms.entry_id_field)."""
    try:
        value: str = forms.entry_id_field().clean(request.POST.get("entry", ""))
    except ValidationError as e:
        raise InvalidRequest(f"'entry': {e.messages[0]}", field="entry") from e
    return value


def composer_context(session: Session, *, draft: str = "") -> dict[str, Any]:
    """What templates/sessions_app/chat/composer.html needs (the UI's session page can use it too)."""
    registry = registry_from_settings()
    context = selectors.session_context(session=session)
    model = registry.resolve_context(context.get("model"))
    return {
        "session": session,
        "models": registry.models,
        "model_id": model.id,
        "levels": turns.THINKING_LEVELS,
        "thinking": context.get("thinkingLevel") or "off",
        "draft": draft,
    }


def render_composer(request: HttpRequest, session: Session, *, draft: str = "") -> str:
    """The composer for the session as it is now: a command has just moved its leaf, so the model
    and thinking pickers are read at the new leaf, not at the one the request started with."""
    session.refresh_from_db()
    return render_to_string("sessions_app/chat/composer.html", composer_context(session, draft=draft), request)


@chat_view
async def chat_send(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """text, parent (optional: the entry to reply under; empty = the session's leaf)."""
    text = _field(request, "text", limit=200_000)
    parent = request.POST.get("parent", "").strip()
    turn = await sync_to_async(turns.chat_send)(
        session=session, text=text, author=user, parent_id=parent or turns.UNSET
    )
    await streaming.dispatch(turn)
    if request.headers.get("HX-Request") == "true":
        html = await sync_to_async(render_composer)(request, session)
        return HttpResponse(html)
    return redirect("sessions:detail", session.public_id)


@chat_view
async def chat_edit(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """entry (a user message), text: a sibling user message and its reply."""
    turn = await sync_to_async(turns.chat_edit)(
        session=session, entry_id=_entry_id(request), text=_field(request, "text", limit=200_000), author=user
    )
    await streaming.dispatch(turn)
    return _done(request, session)


@chat_view
async def chat_regenerate(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """entry (an assistant message): another reply beside it."""
    turn = await sync_to_async(turns.chat_regenerate)(session=session, entry_id=_entry_id(request), author=user)
    await streaming.dispatch(turn)
    return _done(request, session)


@chat_view
async def chat_continue(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """entry (any node): move the leaf there and run a reply under it."""
    turn = await sync_to_async(turns.chat_continue)(session=session, entry_id=_entry_id(request), author=user)
    await streaming.dispatch(turn)
    return _done(request, session)


@chat_view
async def chat_stop(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """turn (its public id): stop streaming; the partial reply is kept with stopReason aborted."""
    turn = await sync_to_async(turns.chat_stop)(session=session, turn_id=_field(request, "turn"))
    streaming.abort_local(str(turn.public_id))
    return _done(request, session)


@chat_view
async def chat_model(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """model (a model id from the registry): a model_change entry at the leaf."""
    await sync_to_async(turns.model_set)(session=session, model_id=_field(request, "model"), author=user)
    return _done(request, session)


@chat_view
async def chat_thinking(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """level (off, minimal, low, medium, high, xhigh): a thinking_level_change entry at the leaf."""
    await sync_to_async(turns.thinking_set)(session=session, level=_field(request, "level"), author=user)
    return _done(request, session)


@chat_view
async def chat_compact(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """instructions (optional focus): compact the context at the leaf now."""
    instructions = _field(request, "instructions", required=False, limit=10_000).strip()
    await compacting.chat_compact(session=session, instructions=instructions or None)
    return _done(request, session)


@chat_view_needing("branch")
async def chat_navigate(request: HttpRequest, session: Session, user: User) -> HttpResponse:
    """entry (target), summarize (1 = summarize the branch being left), instructions (optional)."""
    result = await turns.navigate(
        session=session,
        target_id=_entry_id(request),
        summarize=request.POST.get("summarize") in ("1", "true", "on"),
        instructions=_field(request, "instructions", required=False, limit=10_000).strip() or None,
        author=user,
    )
    if request.headers.get("HX-Request") == "true":
        html = await sync_to_async(render_composer)(request, session, draft=result.editor_text or "")
        return HttpResponse(html)
    return redirect("sessions:detail", session.public_id)
