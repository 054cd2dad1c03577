"""The context inspector's reads: what the model saw at an entry (pi's buildSessionContext there,
by core.context's one rule), each message's token estimate (pi's estimateTokens) and where the next
compaction would cut (pi's findCutPoint with the default keepRecentTokens)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessions_app.core import compaction
from sessions_app.core import context as ctx
from sessions_app.core.tree import row_text
from sessions_app.llm.base import ModelInfo
from sessions_app.llm.registry import Registry
from sessions_app.models import Session
from sessions_app.store import selectors


@dataclass(frozen=True, slots=True)
class ContextItem:
    entry_id: str
    entry_type: str  # the entry it comes from: message, compaction, branch_summary, custom_message
    message: Mapping[str, Any]  # exactly as in the context
    tokens: int  # compaction.estimate_tokens
    text: str  # one line about the entry (tree.row_text)


@dataclass(frozen=True, slots=True)
class Inspection:
    leaf_id: str
    items: list[ContextItem]
    tokens: int  # the items' estimates, added
    thinking_level: Any
    model: Mapping[str, Any] | None  # pi's {provider, modelId} at the entry, None when the path names none
    model_info: ModelInfo | None  # that model in the registry; None: unknown here
    cut_at: int | None  # items[:cut_at] would be summarized by the next compaction; None: no cut
    split_turn: bool  # the cut falls inside a turn (its start is summarized apart)
    no_cut: str  # why there is no cut, when there is none
    keep_recent_tokens: int


def context_inspect(*, session: Session, entry_id: str, registry: Registry) -> Inspection:
    """The context at entry_id (EntryNotFound if the session has no such entry)."""
    thinking, model, stop = selectors.context_start(session=session, entry_id=entry_id)
    path = selectors.path_nodes(session=session, leaf_id=entry_id, stop_id=stop)
    pairs = ctx.context_nodes(path)
    items = []
    for node, message in pairs:
        assert isinstance(message, dict)  # built from decoded lines: never stored JSON here
        items.append(ContextItem(node.id, node.type, message, compaction.estimate_tokens(message), row_text(node.data)))
    keep = compaction.DEFAULT_SETTINGS.keep_recent_tokens
    cut_at, split, no_cut = _cut(path, [node.id for node, _ in pairs], keep)
    return Inspection(
        leaf_id=entry_id,
        items=items,
        tokens=sum(item.tokens for item in items),
        thinking_level=thinking,
        model=model,
        model_info=_model_info(registry, model),
        cut_at=cut_at,
        split_turn=split,
        no_cut=no_cut,
        keep_recent_tokens=keep,
    )


def _cut(path: list[Any], item_ids: list[str], keep: int) -> tuple[int | None, bool, str]:
    """Where the next compaction's first kept entry falls among the items, as pi's
    prepareCompaction finds it: after the last compaction, keeping about `keep` tokens."""
    if not path:
        return None, False, "nothing to compact"
    if path[-1].type == "compaction":
        return None, False, "already compacted"  # pi's words
    previous = next((i for i in range(len(path) - 1, -1, -1) if path[i].type == "compaction"), -1)
    cut = compaction.find_cut_point(path, start=previous + 1, end=len(path), keep_recent_tokens=keep)
    if cut.first_kept_entry_index >= len(path):
        return None, False, "nothing could be kept"
    at = {node.id: i for i, node in enumerate(path)}
    first_kept = cut.first_kept_entry_index
    # The previous summary and the entries it kept come before the boundary: they are folded in.
    kept = next((n for n, entry_id in enumerate(item_ids) if at[entry_id] >= first_kept), len(item_ids))
    return kept, cut.is_split_turn, ""


def _model_info(registry: Registry, model: Mapping[str, Any] | None) -> ModelInfo | None:
    return registry.describe(provider=model.get("provider"), model_id=model.get("modelId")) if model else None
