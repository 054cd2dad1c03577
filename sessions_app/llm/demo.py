"""An offline model: deterministic replies streamed word by word, no network, no key.

Lets the live-chat UI, streaming, abort and compaction be exercised anywhere (tests, demos, CI).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessions_app.core.compaction import estimate_tokens
from sessions_app.core.tree import content_text
from sessions_app.llm.base import (
    ABORTED_MESSAGE,
    Aborted,
    Done,
    Error,
    Event,
    ModelInfo,
    TextDelta,
    ThinkingDelta,
    ThinkingLevel,
    ToolSpec,
    Usage,
    until_abort,
)

DEMO_MODEL = ModelInfo(
    id="piweb-demo",
    name="piweb demo (offline)",
    api="demo",
    provider="piweb",
    context_window=128000,
    max_tokens=4096,
    reasoning=True,
    images=True,
)


def _last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return content_text(m.get("content"), " ")
    return ""


def demo_reply(messages: Sequence[Mapping[str, Any]]) -> str:
    prompt = " ".join(_last_user_text(messages).split())
    quoted = prompt if len(prompt) <= 200 else prompt[:199] + "…"
    turns = sum(1 for m in messages if m.get("role") == "user")
    return (
        f"This is the piweb demo model, running offline. You said: “{quoted}”. "
        f"This conversation has {turns} user message{'s' if turns != 1 else ''} in context. "
        "Configure PIWEB_OPENAI_API_KEY or PIWEB_ANTHROPIC_API_KEY to talk to a real model."
    )


@dataclass(frozen=True, slots=True)
class DemoProvider:
    delay: float = 0.02  # seconds between streamed words

    async def stream(
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
        input_tokens = sum(estimate_tokens(m) for m in messages) + (len(system or "") + 3) // 4
        yield Usage(input=input_tokens, output=0, cache_read=0, cache_write=0)
        reply = demo_reply(messages)
        chunks: list[Event] = []
        if thinking_level != "off":
            chunks += [ThinkingDelta(0, w) for w in re.findall(r"\S+\s*", "The user wants a demo reply. ")]
        chunks += [TextDelta(1, w) for w in re.findall(r"\s*\S+", reply)]
        output = 0
        try:
            for chunk in chunks:
                if self.delay:
                    await until_abort(asyncio.sleep(self.delay), abort)
                elif abort.is_set():
                    raise Aborted
                output += 1
                yield chunk
        except Aborted:
            yield Usage(output=output)
            yield Error(ABORTED_MESSAGE, aborted=True)
            return
        yield Usage(output=output)
        yield Done("stop")
