"""Anthropic Messages streaming through the official ``anthropic`` SDK.

Mirrors pi-ai's anthropic provider: blocks keyed by the stream's content index, extended thinking
with a budget from the thinking level, signature deltas appended to thinkingSignature, tool input
from input_json deltas, usage (with cache tokens) from message_start and message_delta.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic

from sessions_app.llm.base import (
    DoneReason,
    Event,
    ModelInfo,
    SdkConnection,
    TextDelta,
    ThinkingDelta,
    ThinkingLevel,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from sessions_app.llm.sdk_stream import ChunkReader, sdk_stream

# pi-ai's default budgets (simple-options.ts); xhigh is clamped to high.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
_MIN_OUTPUT_TOKENS = 1024
_STOP: dict[str, DoneReason] = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "pause_turn": "stop",
    "stop_sequence": "stop",
}


def thinking_budget(*, level: ThinkingLevel, max_tokens: int, model_max_tokens: int) -> tuple[int, int]:
    """(max_tokens, budget_tokens) as pi's adjustMaxTokensForThinking: room for the answer is kept."""
    budget = THINKING_BUDGETS[level]
    total = min(max_tokens + budget, model_max_tokens)
    if total <= budget:
        budget = max(0, total - _MIN_OUTPUT_TOKENS)
    return total, budget


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text" and b.get("text", "").strip():
            out.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "image":
            source = {"type": "base64", "media_type": b.get("mimeType"), "data": b.get("data")}
            out.append({"type": "image", "source": source})
    return out


def convert_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pi LLM messages to Messages API turns; consecutive tool results share one user turn."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        role = m.get("role")
        if role == "user":
            content = m.get("content")
            if isinstance(content, str):
                if content.strip():
                    out.append({"role": "user", "content": content})
            elif blocks := _content(_blocks(content)):
                out.append({"role": "user", "content": blocks})
        elif role == "assistant":
            blocks = _assistant_blocks(_blocks(m.get("content")))
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            results: list[dict[str, Any]] = []
            while i < len(messages) and messages[i].get("role") == "toolResult":
                r = messages[i]
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": r.get("toolCallId"),
                        "content": _content(_blocks(r.get("content"))),
                        "is_error": bool(r.get("isError")),
                    }
                )
                i += 1
            out.append({"role": "user", "content": results})
            continue
        i += 1
    return out


def _assistant_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text" and b.get("text", "").strip():
            out.append({"type": "text", "text": b["text"]})
        elif kind == "thinking":
            signature = b.get("thinkingSignature")
            if b.get("redacted"):
                out.append({"type": "redacted_thinking", "data": signature})
            elif not b.get("thinking", "").strip():
                continue
            elif isinstance(signature, str) and signature.strip():
                out.append({"type": "thinking", "thinking": b["thinking"], "signature": signature})
            else:  # unsigned thinking (e.g. an aborted stream) is rejected by the API: send it as text
                out.append({"type": "text", "text": b["thinking"]})
        elif kind == "toolCall":
            out.append(
                {"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("arguments") or {}}
            )
    return out


def convert_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": {
                "type": "object",
                "properties": t.parameters.get("properties", {}),
                "required": t.parameters.get("required", []),
            },
        }
        for t in tools
    ]


def _usage(raw: Any) -> Usage:
    # message_delta may omit fields (proxies); None leaves the earlier value in place.
    return Usage(
        input=getattr(raw, "input_tokens", None),
        output=getattr(raw, "output_tokens", None),
        cache_read=getattr(raw, "cache_read_input_tokens", None),
        cache_write=getattr(raw, "cache_creation_input_tokens", None),
    )


class _Events(ChunkReader[Any]):
    """Stream events to piweb events; the stop reason comes with message_delta."""

    stop_reasons = _STOP
    stop_field = "stop_reason"

    def events(self, chunk: Any) -> list[Event]:
        if chunk.type == "message_delta" and chunk.delta.stop_reason:
            self.stopped(chunk.delta.stop_reason)
        return _events(chunk)


def _events(event: Any) -> list[Event]:
    kind = event.type
    if kind == "message_start":
        u = event.message.usage
        return [
            Usage(
                input=u.input_tokens or 0,
                output=u.output_tokens or 0,
                cache_read=getattr(u, "cache_read_input_tokens", None) or 0,
                cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
            )
        ]
    if kind == "content_block_start":
        block, index = event.content_block, event.index
        if block.type == "text":
            return [TextDelta(index, block.text or "")]
        if block.type == "thinking":
            return [ThinkingDelta(index, "", signature="")]
        if block.type == "redacted_thinking":
            return [ThinkingDelta(index, "[Reasoning redacted]", signature=block.data, redacted=True)]
        if block.type == "tool_use":
            return [ToolCallDelta(index, "start", id=block.id, name=block.name)]
        return []
    if kind == "content_block_delta":
        delta, index = event.delta, event.index
        if delta.type == "text_delta":
            return [TextDelta(index, delta.text)]
        if delta.type == "thinking_delta":
            return [ThinkingDelta(index, delta.thinking)]
        if delta.type == "signature_delta":
            return [ThinkingDelta(index, "", signature=delta.signature)]
        if delta.type == "input_json_delta":
            return [ToolCallDelta(index, "args", json=delta.partial_json)]
        return []
    if kind == "content_block_stop":
        return [ToolCallDelta(event.index, "end")]  # ignored unless the block is a tool call
    if kind == "message_delta":
        return [_usage(event.usage)]
    return []


@dataclass(frozen=True, slots=True)
class AnthropicMessagesProvider(SdkConnection):
    def _client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(**self.client_options())

    def stream(
        self,
        *,
        model: ModelInfo,
        messages: Sequence[Mapping[str, Any]],
        system: str | None,
        thinking_level: ThinkingLevel,
        max_tokens: int,
        abort: asyncio.Event,
        tools: Sequence[ToolSpec] = (),
    ) -> AsyncIterator[Event]:
        params: dict[str, Any] = {
            "model": model.id,
            "messages": convert_messages(messages),
            "max_tokens": max_tokens,
            "stream": True,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = convert_tools(tools)
        if model.reasoning and thinking_level != "off":
            total, budget = thinking_budget(
                level=thinking_level, max_tokens=max_tokens, model_max_tokens=model.max_tokens
            )
            params["max_tokens"] = total
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return sdk_stream(
            connect=self._client,
            open_stream=lambda client: client.messages.create(**params),
            reader=_Events(),
            abort=abort,
            failure=self.failure,
        )
