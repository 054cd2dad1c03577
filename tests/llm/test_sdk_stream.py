"""The shared SDK stream loop with fake SDK objects: terminal events, abort, and what gets closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest

from sessions_app.llm.base import Done, Error, Event, SdkConnection, Secret, TextDelta, ToolCallDelta
from sessions_app.llm.sdk_stream import ChunkReader, sdk_stream

KEY = "sk-fake-SECRET"


class FakeStream:
    def __init__(self, chunks: list[Any], *, hang: bool = False) -> None:
        self.chunks, self.hang, self.closed = chunks, hang, False

    async def _iterate(self) -> AsyncIterator[Any]:
        for chunk in self.chunks:
            if isinstance(chunk, Exception):
                raise chunk
            yield chunk
        if self.hang:
            await asyncio.Event().wait()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def close(self) -> None:
        self.closed = True


class FakeClient:
    def __init__(self, response: FakeStream) -> None:
        self.response, self.closed, self.opened = response, False, 0

    async def create(self) -> FakeStream:
        self.opened += 1
        return self.response

    async def close(self) -> None:
        self.closed = True


class Words(ChunkReader[str]):
    """A chunk is a word, or "!reason" for a stop reason; "tool" opens a tool call closed at the end."""

    stop_reasons = {"done": "stop", "full": "length"}
    stop_field = "why"

    def __init__(self) -> None:
        super().__init__()
        self.tool = False

    def events(self, chunk: str) -> list[Event]:
        if chunk.startswith("!"):
            self.stopped(chunk[1:])
            return []
        if chunk == "tool":
            self.tool = True
            return [ToolCallDelta("t", "start", id="1", name="x")]
        return [TextDelta(0, chunk)]

    def closing(self) -> list[Event]:
        return [ToolCallDelta("t", "end")] if self.tool else []


def stream(client: FakeClient, abort: asyncio.Event | None = None) -> AsyncGenerator[Event, None]:
    return sdk_stream(
        connect=lambda: client,
        open_stream=lambda c: c.create(),
        reader=Words(),
        abort=abort or asyncio.Event(),
        failure=SdkConnection(Secret(KEY)).failure,
    )


async def run(client: FakeClient, abort: asyncio.Event | None = None) -> list[Event]:
    return [event async for event in stream(client, abort)]


@pytest.mark.asyncio
async def test_it_yields_the_readers_events_then_closings_and_the_last_known_stop_reason():
    client = FakeClient(FakeStream(["a", "tool", "!done", "b", "!full"]))
    assert await run(client) == [
        TextDelta(0, "a"),
        ToolCallDelta("t", "start", id="1", name="x"),
        TextDelta(0, "b"),
        ToolCallDelta("t", "end"),
        Done("length"),
    ]
    assert client.response.closed and client.closed


@pytest.mark.asyncio
async def test_an_unknown_stop_reason_is_an_error_even_when_a_known_one_follows():
    events = await run(FakeClient(FakeStream(["a", "!refusal", "!done"])))
    assert events == [TextDelta(0, "a"), Error("Provider why: refusal")]


@pytest.mark.asyncio
async def test_an_sdk_error_mid_stream_ends_it_with_the_redacted_message_and_no_closings():
    client = FakeClient(FakeStream(["tool", RuntimeError(f"boom, key {KEY}")]))
    events = await run(client)
    assert events == [ToolCallDelta("t", "start", id="1", name="x"), Error("boom, key ***")]
    assert client.response.closed and client.closed


@pytest.mark.asyncio
async def test_an_error_without_text_is_named_by_its_type():
    assert (await run(FakeClient(FakeStream([TimeoutError()]))))[-1] == Error("TimeoutError")


@pytest.mark.asyncio
async def test_abort_set_before_the_request_never_opens_it():
    abort = asyncio.Event()
    abort.set()
    client = FakeClient(FakeStream(["a"]))
    assert await run(client, abort) == [Error("Request was aborted", aborted=True)]
    assert client.opened == 0 and client.closed


@pytest.mark.asyncio
async def test_abort_while_the_sdk_is_silent_ends_the_stream_and_closes_everything():
    abort = asyncio.Event()
    client = FakeClient(FakeStream(["a"], hang=True))
    asyncio.get_running_loop().call_later(0.05, abort.set)
    events = await asyncio.wait_for(run(client, abort), timeout=2)
    assert events == [TextDelta(0, "a"), Error("Request was aborted", aborted=True)]
    assert client.response.closed and client.closed


@pytest.mark.asyncio
async def test_a_consumer_that_stops_early_still_closes_the_response_and_the_client():
    client = FakeClient(FakeStream(["a", "b"]))
    events = stream(client)
    assert await anext(events) == TextDelta(0, "a")
    await events.aclose()
    assert client.response.closed and client.closed
