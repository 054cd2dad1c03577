"""OpenAI Chat Completions (and compatible servers) through the official ``openai`` SDK.

Mirrors pi-ai's openai-completions provider: one text block, one thinking block (from
``reasoning_content``/``reasoning``/``reasoning_text`` deltas, signature = the field name so it can be
sent back), tool calls keyed by their stream index, usage from the final ``include_usage`` chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from sessions_app.core import jsjson
from sessions_app.core.tree import content_text
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

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_STOP: dict[str, DoneReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def _data_url(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"}}


def convert_messages(
    messages: Sequence[Mapping[str, Any]], *, system: str | None, model: ModelInfo
) -> list[dict[str, Any]]:
    """pi LLM messages (user/assistant/toolResult) to Chat Completions messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    i = 0
    while i < len(messages):
        m = messages[i]
        role = m.get("role")
        if role == "user":
            content = m.get("content")
            if isinstance(content, str):
                out.append({"role": "user", "content": content})
            else:
                parts = [
                    {"type": "text", "text": b.get("text", "")} if b.get("type") == "text" else _data_url(b)
                    for b in content or []
                    if isinstance(b, dict) and b.get("type") in ("text", "image")
                ]
                if parts:
                    out.append({"role": "user", "content": parts})
        elif role == "assistant":
            _assistant(m, out)
        elif role == "toolResult":
            # Consecutive tool results, then their images in one user message (tools cannot carry images).
            images: list[dict[str, Any]] = []
            while i < len(messages) and messages[i].get("role") == "toolResult":
                result = messages[i]
                blocks = [b for b in result.get("content") or [] if isinstance(b, dict)]
                text = content_text(blocks, "\n")
                out.append(
                    {
                        "role": "tool",
                        "content": text or "(see attached image)",
                        "tool_call_id": result.get("toolCallId"),
                    }
                )
                if model.images:
                    images += [_data_url(b) for b in blocks if b.get("type") == "image"]
                i += 1
            if images:
                out.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
                    }
                )
            continue
        i += 1
    return out


def _assistant(m: Mapping[str, Any], out: list[dict[str, Any]]) -> None:
    blocks = [b for b in m.get("content") or [] if isinstance(b, dict)]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text" and b.get("text", "").strip())
    if text:
        message["content"] = text
    thinking = [b for b in blocks if b.get("type") == "thinking" and b.get("thinking", "").strip()]
    signature = thinking[0].get("thinkingSignature") if thinking else None
    if isinstance(signature, str) and signature in _REASONING_FIELDS:
        message[signature] = "\n".join(b["thinking"] for b in thinking)
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if calls:
        message["tool_calls"] = [
            {
                "id": b.get("id"),
                "type": "function",
                "function": {"name": b.get("name"), "arguments": jsjson.dumps(b.get("arguments", {}))},
            }
            for b in calls
        ]
    if message["content"] is None and not calls:
        return  # e.g. an aborted reply with no content: the API rejects empty assistant messages
    out.append(message)


def convert_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            },
        }
        for t in tools
    ]


def _usage_event(raw: Any) -> Usage:
    prompt = getattr(raw, "prompt_tokens", 0) or 0
    details = getattr(raw, "prompt_tokens_details", None)
    extra = getattr(details, "model_extra", None) or {}
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    write = extra.get("cache_write_tokens") or 0
    read = max(0, cached - write) if write > 0 else cached
    return Usage(
        input=max(0, prompt - read - write),
        output=getattr(raw, "completion_tokens", 0) or 0,
        cache_read=read,
        cache_write=write,
    )


@dataclass(frozen=True, slots=True)
class OpenAIChatProvider(SdkConnection):
    def _client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(**self.client_options())

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
            "messages": convert_messages(messages, system=system, model=model),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": max_tokens,
        }
        if tools:
            params["tools"] = convert_tools(tools)
        if model.reasoning and thinking_level != "off":
            params["reasoning_effort"] = _EFFORT[thinking_level]
        return sdk_stream(
            connect=self._client,
            open_stream=lambda client: client.chat.completions.create(**params),
            reader=_Chunks(),
            abort=abort,
            failure=self.failure,
        )


class _Chunks(ChunkReader[Any]):
    """Chunks to events; remembers which blocks were opened (ids and names come only once)."""

    stop_reasons = _STOP
    stop_field = "finish_reason"

    def __init__(self) -> None:
        super().__init__()
        self.thinking_started = False
        self.tools: list[str] = []

    def events(self, chunk: Any) -> list[Event]:
        events: list[Event] = [] if chunk.usage is None else [_usage_event(chunk.usage)]
        if not chunk.choices:
            return events
        choice = chunk.choices[0]
        if choice.finish_reason:
            self.stopped(choice.finish_reason)
        delta = choice.delta
        if delta is None:
            return events
        extra = delta.model_extra or {}
        for name in _REASONING_FIELDS:  # the first non-empty one: some servers send two with the same text
            value = extra.get(name)
            if isinstance(value, str) and value:
                # pi stores the field name as thinkingSignature, to send the reasoning back under it.
                signature = None if self.thinking_started else name
                self.thinking_started = True
                events.append(ThinkingDelta("reasoning", value, signature=signature))
                break
        if delta.content:
            events.append(TextDelta("text", delta.content))
        for call in delta.tool_calls or []:
            key = f"tool:{call.index}"
            function = call.function
            if key not in self.tools:
                self.tools.append(key)
                name = (function.name if function else None) or ""
                events.append(ToolCallDelta(key, "start", id=call.id or "", name=name))
            if function is not None and function.arguments:
                events.append(ToolCallDelta(key, "args", json=function.arguments))
        return events

    def closing(self) -> list[Event]:
        return [ToolCallDelta(key, "end") for key in self.tools]
