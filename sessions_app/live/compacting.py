"""Compaction, run: by hand at the leaf, or after a turn whose context passed pi's threshold.

The rules (what to summarize, where to cut, the prompts) are pi's, in core/compaction.py; this
module reads the path, calls the model through llm/summarize.py and appends the compaction entry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from sessions_app.core import compaction
from sessions_app.core.clock import now_ms
from sessions_app.core.tree import Node
from sessions_app.errors import NothingToCompact
from sessions_app.llm.base import ModelInfo
from sessions_app.llm.registry import Registry, registry_from_settings
from sessions_app.llm.summarize import summarizer
from sessions_app.models import Entry, Session
from sessions_app.store import selectors, services


def compaction_settings() -> compaction.CompactionSettings:
    return compaction.CompactionSettings(
        enabled=settings.PIWEB_COMPACTION_ENABLED,
        reserve_tokens=settings.PIWEB_COMPACTION_RESERVE_TOKENS,
        keep_recent_tokens=settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS,
    )


async def auto_compact(
    session_pk: int, leaf_id: str, model: ModelInfo, message: Mapping[str, Any], registry: Registry
) -> str | None:
    """pi's threshold rule after a turn: compact when the context exceeds the window minus the reserve."""
    tokens = compaction.calculate_context_tokens(message.get("usage") or {})
    if not compaction.should_compact(tokens=int(tokens), window=model.context_window, settings=compaction_settings()):
        return None
    entry = await compact_at(session_pk=session_pk, leaf_id=leaf_id, instructions=None, registry=registry)
    return entry.entry_id


# --- compaction -------------------------------------------------------------------------------------


def _compaction_input(session_pk: int, leaf_id: str) -> tuple[list[Node], dict[str, Any]]:
    session = Session.objects.get(pk=session_pk)
    path = selectors.path_nodes(session=session, leaf_id=leaf_id)
    context = selectors.session_context(session=session, leaf_id=leaf_id)
    return path, context


@transaction.atomic
def _store_compaction(session_pk: int, leaf_id: str, result: compaction.CompactionResult) -> Entry:
    session = Session.objects.get(pk=session_pk)
    tokens = result.tokens_before
    payload = {
        "type": "compaction",
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": int(tokens) if float(tokens).is_integer() else tokens,
        "details": result.details,
        "fromHook": False,
    }
    return services.entry_append(
        session=session, payload=payload, parent_id=leaf_id, move_leaf=session.leaf_id == leaf_id
    )


async def compact_at(
    *, session_pk: int, leaf_id: str, instructions: str | None, registry: Registry | None = None
) -> Entry:
    """Compact the path ending at leaf_id (pi's rules); the compaction entry hangs off leaf_id."""
    registry = registry or registry_from_settings()
    path, context = await database_sync_to_async(_compaction_input)(session_pk, leaf_id)
    preparation = compaction.prepare_compaction(path, compaction_settings())
    if preparation is None or not (preparation.messages_to_summarize or preparation.turn_prefix_messages):
        raise NothingToCompact("Nothing to compact (session too small)")
    model = registry.resolve_context(context.get("model"))
    summarize = summarizer(
        provider=registry.provider_for(model), model=model, abort=asyncio.Event(), timestamp_ms=now_ms()
    )
    result = await compaction.compact(preparation, summarize=summarize, custom_instructions=instructions or None)
    entry: Entry = await database_sync_to_async(_store_compaction)(session_pk, leaf_id, result)
    return entry


async def chat_compact(*, session: Session, instructions: str | None = None) -> Entry:
    """Manual compaction at the session's leaf, with optional focus instructions."""
    if session.leaf_id is None:
        raise NothingToCompact("Nothing to compact (session too small)")
    return await compact_at(session_pk=session.pk, leaf_id=session.leaf_id, instructions=instructions)
