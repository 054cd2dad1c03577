"""The one stream/abort loop both SDK adapters run (OpenAI Chat Completions, Anthropic Messages).

An adapter supplies only what differs between vendors: how to open the SDK stream (``open_stream``),
how one SDK chunk becomes piweb events and which stop reasons it knows (a :class:`ChunkReader`), and
how an SDK exception reads to the user (``failure``, :meth:`~sessions_app.llm.base.SdkConnection.failure`
by default). The loop owns the rest: every await raced against the abort event, the terminal event
(``Done``, ``Error`` or the aborted ``Error``), and closing the response and the client.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import ClassVar, Generic, Protocol, TypeVar

from sessions_app.llm.base import ABORTED_MESSAGE, Aborted, Done, DoneReason, Error, Event, until_abort

ChunkT = TypeVar("ChunkT")
ChunkT_co = TypeVar("ChunkT_co", covariant=True)


class Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=Closable)


class SdkStream(Closable, Protocol[ChunkT_co]):
    """What an SDK's streaming ``create`` returns: an async iterable of chunks that can be closed."""

    def __aiter__(self) -> AsyncIterator[ChunkT_co]: ...


class ChunkReader(ABC, Generic[ChunkT]):
    """One stream's translation state: SDK chunks in, piweb events out, and how the turn ended.

    A subclass names the vendor's stop reasons (``stop_reasons``, under the wire name ``stop_field``),
    turns a chunk into events (:meth:`events`, calling :meth:`stopped` when the chunk carries a stop
    reason) and may close open blocks at the end (:meth:`closing`). A stop reason it does not know
    makes the end an Error, even if a known one follows; otherwise the last one seen wins.
    """

    stop_reasons: ClassVar[Mapping[str, DoneReason]]
    stop_field: ClassVar[str]

    def __init__(self) -> None:
        self.stop: DoneReason = "stop"
        self.error: str | None = None

    @abstractmethod
    def events(self, chunk: ChunkT) -> list[Event]: ...

    def stopped(self, reason: str) -> None:
        stop = self.stop_reasons.get(reason)
        if stop is None:  # e.g. content_filter or refusal
            self.error = f"Provider {self.stop_field}: {reason}"
        else:
            self.stop = stop

    def closing(self) -> list[Event]:
        return []

    def finish(self) -> list[Event]:
        """The events after the last chunk of a stream that was not cut short: closings, then the end."""
        return [*self.closing(), Error(self.error) if self.error is not None else Done(self.stop)]


async def sdk_stream(
    *,
    connect: Callable[[], ClientT],
    open_stream: Callable[[ClientT], Awaitable[SdkStream[ChunkT]]],
    reader: ChunkReader[ChunkT],
    abort: asyncio.Event,
    failure: Callable[[Exception], Error],
) -> AsyncGenerator[Event, None]:
    """Stream one turn through an SDK. Never raises: failures end the stream with an Error event.

    The request and every chunk read race the abort event (:func:`until_abort`), so an abort ends the
    stream at once with pi-ai's aborted error, keeping whatever was yielded before it.
    """
    client = connect()
    try:
        response = await until_abort(open_stream(client), abort)
        try:
            chunks = response.__aiter__()
            while True:
                try:
                    chunk = await until_abort(chunks.__anext__(), abort)
                except StopAsyncIteration:
                    break
                for event in reader.events(chunk):
                    yield event
        finally:
            await response.close()
    except Aborted:
        yield Error(ABORTED_MESSAGE, aborted=True)
        return
    except Exception as exc:  # APIError subclasses, SSE error events, timeouts, raw transport errors
        yield failure(exc)
        return
    finally:
        await client.close()
    for event in reader.finish():
        yield event
