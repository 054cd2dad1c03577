"""Fold streamed events into pi's AssistantMessage (spec 7.3), the shape stored in a message entry.

Key order follows pi: role, content, api, provider, model, usage, stopReason, errorMessage?,
timestamp. Partial messages (``partial()``) have the same shape, for live rendering.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sessions_app.llm.base import (
    BlockKey,
    Done,
    Error,
    Event,
    ModelInfo,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)


def parse_arguments(text: str) -> Any:
    """Tool arguments from streamed JSON; empty or cut-off JSON (an aborted call) gives {}."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Assembler:
    def __init__(self, *, model: ModelInfo, timestamp_ms: int) -> None:
        self.model = model
        self.timestamp_ms = timestamp_ms
        self.content: list[dict[str, Any]] = []
        self._blocks: dict[BlockKey, dict[str, Any]] = {}
        self._args: dict[BlockKey, str] = {}
        self.counts = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.stop_reason: StopReason = "stop"
        self.error_message: str | None = None
        self.finished = False

    def _block(self, key: BlockKey, fresh: dict[str, Any]) -> dict[str, Any]:
        block = self._blocks.get(key)
        if block is None or block["type"] != fresh["type"]:
            block = fresh
            self._blocks[key] = block
            self.content.append(block)
        return block

    def feed(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._block(event.block, {"type": "text", "text": ""})["text"] += event.text
        elif isinstance(event, ThinkingDelta):
            block = self._block(event.block, {"type": "thinking", "thinking": ""})
            block["thinking"] += event.text
            if event.signature is not None:
                block["thinkingSignature"] = block.get("thinkingSignature", "") + event.signature
            if event.redacted:
                block["redacted"] = True
        elif isinstance(event, ToolCallDelta):
            self._tool_call(event)
        elif isinstance(event, Usage):
            for key, value in (
                ("input", event.input),
                ("output", event.output),
                ("cacheRead", event.cache_read),
                ("cacheWrite", event.cache_write),
            ):
                if value is not None:
                    self.counts[key] = value
        elif isinstance(event, Done):
            self.stop_reason = event.stop_reason
            self.finished = True
        elif isinstance(event, Error):
            self.stop_reason = "aborted" if event.aborted else "error"
            self.error_message = event.message
            self.finished = True

    def _tool_call(self, event: ToolCallDelta) -> None:
        if event.phase == "start":
            fresh = {"type": "toolCall", "id": event.id, "name": event.name, "arguments": {}}
            self._block(event.block, fresh)
            self._args[event.block] = ""
            return
        block = self._blocks.get(event.block)
        if block is None or block["type"] != "toolCall":
            return
        if event.phase == "args":
            self._args[event.block] = self._args.get(event.block, "") + event.json
            if event.id and not block["id"]:
                block["id"] = event.id
            if event.name and not block["name"]:
                block["name"] = event.name
        block["arguments"] = parse_arguments(self._args.get(event.block, ""))

    def usage(self) -> dict[str, Any]:
        c, price = self.counts, self.model.cost
        cost = {
            "input": price.input / 1_000_000 * c["input"],
            "output": price.output / 1_000_000 * c["output"],
            "cacheRead": price.cache_read / 1_000_000 * c["cacheRead"],
            "cacheWrite": price.cache_write / 1_000_000 * c["cacheWrite"],
        }
        cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
        total = c["input"] + c["output"] + c["cacheRead"] + c["cacheWrite"]
        return {**c, "totalTokens": total, "cost": cost}

    def message(self) -> dict[str, Any]:
        """The AssistantMessage so far (final once a Done or Error event was fed)."""
        for key, block in self._blocks.items():
            if block["type"] == "toolCall":
                block["arguments"] = parse_arguments(self._args.get(key, ""))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": [dict(b) for b in self.content],
            "api": self.model.api,
            "provider": self.model.provider,
            "model": self.model.id,
            "usage": self.usage(),
            "stopReason": self.stop_reason,
        }
        if self.error_message is not None:
            message["errorMessage"] = self.error_message
        message["timestamp"] = self.timestamp_ms
        return message


async def collect(events: AsyncIterator[Event], *, model: ModelInfo, timestamp_ms: int) -> dict[str, Any]:
    """Run a whole stream and return the final AssistantMessage."""
    assembler = Assembler(model=model, timestamp_ms=timestamp_ms)
    async for event in events:
        assembler.feed(event)
    return assembler.message()
