"""Streamed-turn events and the Provider protocol shared by every adapter.

Events are deliberately small and provider-neutral: a ``block`` key says which content block a delta
belongs to (Anthropic's content index, or a fixed key for OpenAI's single text/reasoning stream), so
the assembler can rebuild pi's content array without knowing the wire protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
DoneReason = Literal["stop", "length", "toolUse"]  # the stop reasons of a turn that ended well
BlockKey = int | str
ABORTED_MESSAGE = "Request was aborted"  # pi-ai's errorMessage for an aborted request


@dataclass(frozen=True, slots=True)
class TextDelta:
    block: BlockKey
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    block: BlockKey
    text: str = ""
    signature: str | None = None  # appended to thinkingSignature (Anthropic signature_delta)
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """phase start carries id and name, args carries a JSON text fragment, end closes the call."""

    block: BlockKey
    phase: Literal["start", "args", "end"]
    id: str = ""
    name: str = ""
    json: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts so far; later Usage events replace earlier ones field by field."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


@dataclass(frozen=True, slots=True)
class Done:
    stop_reason: DoneReason


@dataclass(frozen=True, slots=True)
class Error:
    message: str
    aborted: bool = False


Event = TextDelta | ThinkingDelta | ToolCallDelta | Usage | Done | Error


@dataclass(frozen=True, slots=True)
class Pricing:
    """US dollars per million tokens, as pi's model.cost."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    name: str
    api: Literal["openai-completions", "anthropic-messages", "demo"]
    provider: str
    context_window: int
    max_tokens: int
    reasoning: bool = False
    images: bool = False
    cost: Pricing = field(default_factory=Pricing)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments object


class Provider(Protocol):
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
        """Stream one assistant turn. Never raises: failures end the stream with an Error event."""
        ...


class Aborted(Exception):
    """The caller set the abort event."""


T = TypeVar("T")


async def until_abort(awaitable: Awaitable[T], abort: asyncio.Event) -> T:
    """Await awaitable unless abort is set first; then cancel it and raise Aborted.

    SDK streams block in socket reads, so racing each read against the event is what lets an abort
    end a stream within a second even while the server is silent.
    """
    if abort.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise Aborted
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise Aborted


def redact(text: str, secrets: Sequence[str]) -> str:
    """Strip key material from text that may reach users or logs (error bodies can echo headers)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class Secret:
    """An API key that never shows itself in repr/str/format (and so not in logs or tracebacks)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> Any:
        raise TypeError("Secret values cannot be pickled")


@dataclass(frozen=True, slots=True)
class SdkConnection:
    """How a provider reaches its API through the vendor's SDK (the same fields for each SDK)."""

    api_key: Secret
    base_url: str | None = None
    max_retries: int = 2
    timeout: float = 600.0

    def client_options(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key.reveal(),
            "base_url": self.base_url,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
        }

    def failure(self, exc: Exception) -> Error:
        """How an SDK exception ends a stream: its text (or its type's name), with the key redacted."""
        return Error(redact(str(exc) or type(exc).__name__, [self.api_key.reveal()]))
