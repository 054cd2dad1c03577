"""Chat commands: send, edit, regenerate, continue, stop, model/thinking changes, compaction, navigation.

Sync services write (and are wrapped in transactions); the returned StreamingTurn is queued and must
be started after commit with ``await streaming.dispatch(turn)`` (the async chat views do that).
Compaction and branch summaries call the LLM, so they are async and write through the sync services.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.db import transaction

from sessions_app.core import compaction, jsjson
from sessions_app.core import tree as treelib
from sessions_app.core import treeview as tv
from sessions_app.core.clock import now_ms
from sessions_app.core.tree import Node
from sessions_app.errors import EntryNotFound, InvalidEntry, TurnNotFound
from sessions_app.live import streaming
from sessions_app.llm.registry import Registry, registry_from_settings
from sessions_app.llm.summarize import summarizer
from sessions_app.models import Entry, Session, StreamingTurn
from sessions_app.store import selectors, services

UNSET: Any = services.UNSET
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


def _message(entry: Entry) -> dict[str, Any]:
    data = jsjson.loads(entry.raw)
    message = data.get("message") if entry.type == "message" else None
    return message if isinstance(message, dict) else {}


def user_payload(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()},
    }


def turn_create(*, session: Session, parent_id: str | None, author: User | None) -> StreamingTurn:
    """A queued turn replying at parent_id, with the model the context there names (or the default)."""
    context = selectors.session_context(session=session, leaf_id=parent_id) if parent_id else {"model": None}
    model = registry_from_settings().resolve_context(context.get("model"))
    return StreamingTurn.objects.create(
        public_id=uuid.uuid4(),
        session=session,
        parent_id=parent_id,
        model=streaming.model_ref(model),
        author=author,
    )


@transaction.atomic
def chat_send(*, session: Session, text: str, author: User | None, parent_id: str | None = UNSET) -> StreamingTurn:
    """Append the user message (at parent_id, default the leaf) and queue the assistant turn."""
    if not text.strip():
        raise InvalidEntry("Write something first.")
    entry = services.entry_append(session=session, payload=user_payload(text), parent_id=parent_id, author=author)
    return turn_create(session=session, parent_id=entry.entry_id, author=author)


@transaction.atomic
def chat_edit(*, session: Session, entry_id: str, text: str, author: User | None) -> StreamingTurn:
    """A new user message beside entry_id (same parent): a sibling branch, then its reply."""
    entry = selectors.entry_get(session=session, entry_id=entry_id)
    if _message(entry).get("role") != "user":
        raise InvalidEntry("Only user messages can be edited.", entryId=entry_id)
    return chat_send(session=session, text=text, author=author, parent_id=entry.parent_id)


@transaction.atomic
def chat_regenerate(*, session: Session, entry_id: str, author: User | None) -> StreamingTurn:
    """Another reply beside an assistant message (a sibling); the leaf moves to its parent."""
    entry = selectors.entry_get(session=session, entry_id=entry_id)
    if _message(entry).get("role") != "assistant":
        raise InvalidEntry("Only assistant messages can be regenerated.", entryId=entry_id)
    services.leaf_move(session=session, entry_id=entry.parent_id)
    return turn_create(session=session, parent_id=entry.parent_id, author=author)


@transaction.atomic
def chat_continue(*, session: Session, entry_id: str, author: User | None) -> StreamingTurn:
    """Run a turn from any node: the leaf moves there and the reply hangs off it."""
    services.leaf_move(session=session, entry_id=entry_id)  # EntryNotFound if there is no such entry
    return turn_create(session=session, parent_id=entry_id, author=author)


def chat_stop(*, session: Session, turn_id: str) -> StreamingTurn:
    """Ask the turn to stop; its runner (in any process) ends the stream and keeps the partial reply."""
    try:
        key = uuid.UUID(str(turn_id))
    except ValueError:
        raise TurnNotFound("Turn not found") from None
    turn = StreamingTurn.objects.filter(session=session, public_id=key).first()
    if turn is None:
        raise TurnNotFound("Turn not found")
    StreamingTurn.objects.filter(pk=turn.pk).update(abort_requested=True)
    turn.abort_requested = True
    return turn


def model_set(*, session: Session, model_id: str, author: User | None) -> Entry:
    """A model_change entry at the leaf; later turns on this path use it."""
    registry = registry_from_settings()
    try:
        model = registry.get(model_id)
    except LookupError:
        raise InvalidEntry(f"Unknown model {model_id!r}", model=model_id) from None
    payload = {"type": "model_change", "provider": model.provider, "modelId": model.id}
    return services.entry_append(session=session, payload=payload, author=author)


def thinking_set(*, session: Session, level: str, author: User | None) -> Entry:
    if level not in THINKING_LEVELS:
        raise InvalidEntry(f"Unknown thinking level {level!r}", level=level)
    return services.entry_append(
        session=session, payload={"type": "thinking_level_change", "thinkingLevel": level}, author=author
    )


# --- navigation with a branch summary -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Navigation:
    leaf_id: str | None
    editor_text: str | None  # a user message's text, for the composer
    summary_entry_id: str | None


def _nav_input(session_pk: int, target_id: str) -> tuple[Session, treelib.TreeIndex, Node]:
    session = Session.objects.get(pk=session_pk)
    rows = Entry.objects.filter(session=session).values_list("entry_id", "parent_id", "type", "raw")
    idx = treelib.index(Node(id=r[0], parent_id=r[1], type=r[2], data=jsjson.loads(r[3])) for r in rows)
    if target_id not in idx.by_id:
        raise EntryNotFound(f"Entry {target_id} not found", entryId=target_id)
    return session, idx, idx.by_id[target_id]


async def navigate(
    *,
    session: Session,
    target_id: str,
    summarize: bool,
    instructions: str | None = None,
    author: User | None = None,
    registry: Registry | None = None,
) -> Navigation:
    """Move the leaf to target_id (pi's /tree); with summarize, the abandoned branch is summarized by
    the LLM and appended as a branch_summary at the new position."""
    locked, idx, target = await database_sync_to_async(_nav_input)(session.pk, target_id)
    old_leaf = locked.leaf_id
    if target_id == old_leaf:
        return Navigation(old_leaf, None, None)
    new_leaf, takes_text = tv.continue_target(target)
    editor_text = treelib.editor_text(target.data) if takes_text else None
    if summarize:
        entries, _ = compaction.collect_entries_for_branch_summary(idx, old_leaf_id=old_leaf, target_id=target_id)
        registry = registry or registry_from_settings()
        context = await database_sync_to_async(selectors.session_context)(session=locked)
        model = registry.resolve_context(context.get("model"))
        summary = await compaction.generate_branch_summary(
            entries,
            summarize=summarizer(provider=registry.provider_for(model), model=model, abort=asyncio.Event()),
            context_window=model.context_window,
            custom_instructions=instructions or None,
        )
        entry = await database_sync_to_async(services.branch_with_summary)(
            session=locked,
            entry_id=new_leaf,
            summary=summary.summary,
            details=summary.details,
            from_hook=False,
            author=author,
        )
        return Navigation(entry.entry_id, editor_text, entry.entry_id)
    await database_sync_to_async(services.leaf_move)(session=locked, entry_id=new_leaf)
    return Navigation(new_leaf, editor_text, None)
