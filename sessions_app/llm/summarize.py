"""Adapter from compaction's injected ``Summarize`` call to a streaming Provider."""

from __future__ import annotations

import asyncio

from sessions_app.core.compaction import Summarize, SummaryRequest
from sessions_app.core.tree import content_text
from sessions_app.llm.assemble import collect
from sessions_app.llm.base import ModelInfo, Provider, ThinkingLevel


class SummaryFailed(RuntimeError):
    pass


def summarizer(*, provider: Provider, model: ModelInfo, abort: asyncio.Event, timestamp_ms: int = 0) -> Summarize:
    """A Summarize that streams one request and returns its text blocks joined with newlines."""

    async def summarize(request: SummaryRequest) -> str:
        level: ThinkingLevel = "high" if model.reasoning and request.reasoning else "off"
        message = await collect(
            provider.stream(
                model=model,
                messages=[{"role": "user", "content": [{"type": "text", "text": request.prompt}], "timestamp": 0}],
                system=request.system,
                thinking_level=level,
                max_tokens=request.max_tokens,
                abort=abort,
            ),
            model=model,
            timestamp_ms=timestamp_ms,
        )
        if message["stopReason"] in ("error", "aborted"):
            raise SummaryFailed(f"Summarization failed: {message.get('errorMessage') or 'Unknown error'}")
        return content_text(message["content"], "\n")

    return summarize
