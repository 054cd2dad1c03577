"""OpenAI Chat Completions provider over real HTTP (local scripted server) through the SDK."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from sessions_app.llm.assemble import collect
from sessions_app.llm.base import ModelInfo, Pricing, Secret, ToolSpec
from sessions_app.llm.openai_chat import OpenAIChatProvider
from tests.llm.server import Fail, ScriptedServer, Stream, openai_sse

KEY = "sk-test-0123456789abcdef-SECRET"
MODEL = ModelInfo("gpt-test", "GPT test", "openai-completions", "openai", 128000, 16384, True, True, Pricing(2, 8, 0.5))
TS = 1_700_000_000_000


def provider(server: ScriptedServer) -> OpenAIChatProvider:
    return OpenAIChatProvider(Secret(KEY), f"{server.url}/v1", max_retries=0, timeout=10)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": choices,
        **extra,
    }


USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 7,
    "total_tokens": 107,
    "prompt_tokens_details": {"cached_tokens": 20},
}


async def run(server: ScriptedServer, messages: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    abort = kw.pop("abort", None) or asyncio.Event()
    events = provider(server).stream(
        model=MODEL,
        messages=messages or [{"role": "user", "content": "hi", "timestamp": 1}],
        system=kw.pop("system", "be brief"),
        thinking_level=kw.pop("thinking_level", "off"),
        max_tokens=kw.pop("max_tokens", 1000),
        abort=abort,
        **kw,
    )
    return await collect(events, model=MODEL, timestamp_ms=TS)


def zero_cost() -> dict[str, float]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


@pytest.mark.asyncio
async def test_it_streams_text_and_usage_into_a_pi_assistant_message(server):
    server.replies.append(
        Stream(
            openai_sse(
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo"}),
                chunk({}, finish="stop"),
                chunk(None, usage=USAGE),
            )
        )
    )
    message = await run(server)
    assert message == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello"}],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": {
            "input": 80,
            "output": 7,
            "cacheRead": 20,
            "cacheWrite": 0,
            "totalTokens": 107,
            "cost": {
                "input": 2 / 1e6 * 80,
                "output": 8 / 1e6 * 7,
                "cacheRead": 0.5 / 1e6 * 20,
                "cacheWrite": 0.0,
                "total": 2 / 1e6 * 80 + 8 / 1e6 * 7 + 0.5 / 1e6 * 20,
            },
        },
        "stopReason": "stop",
        "timestamp": TS,
    }
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "gpt-test"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_completion_tokens"] == 1000
    assert request.body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert "reasoning_effort" not in request.body


@pytest.mark.asyncio
async def test_it_streams_reasoning_and_parallel_tool_calls(server):
    server.replies.append(
        Stream(
            openai_sse(
                chunk({"role": "assistant", "reasoning_content": "Let me "}),
                chunk({"reasoning_content": "look."}),
                chunk({"content": "Reading."}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_a",
                                "type": "function",
                                "function": {"name": "read", "arguments": ""},
                            }
                        ]
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "a'}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_b",
                                "type": "function",
                                "function": {"name": "bash", "arguments": '{"command"'},
                            }
                        ]
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '.py"}'}}]}),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "ls -l"}'}}]}),
                chunk({}, finish="tool_calls"),
                chunk(None, usage={"prompt_tokens": 10, "completion_tokens": 5}),
            )
        )
    )
    tools = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]
    message = await run(server, thinking_level="high", tools=tools)
    assert message["content"] == [
        {"type": "thinking", "thinking": "Let me look.", "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "Reading."},
        {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a.py"}},
        {"type": "toolCall", "id": "call_b", "name": "bash", "arguments": {"command": "ls -l"}},
    ]
    assert message["stopReason"] == "toolUse"
    assert message["usage"]["totalTokens"] == 15
    body = server.requests[0].body
    assert body["reasoning_effort"] == "high"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": False,
            },
        }
    ]


@pytest.mark.asyncio
async def test_it_converts_pi_history_to_chat_messages(server):
    server.replies.append(Stream(openai_sse(chunk({"content": "ok"}, finish="stop"))))
    history = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "see"}, {"type": "image", "data": "AAA", "mimeType": "image/png"}],
            "timestamp": 1,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "thinkingSignature": "reasoning_content"},
                {"type": "text", "text": "I will read it"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "ä.py", "n": 1.0}},
            ],
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "toolResult",
            "toolCallId": "c2",
            "toolName": "shot",
            "content": [{"type": "image", "data": "BBB", "mimeType": "image/jpeg"}],
            "isError": False,
            "timestamp": 4,
        },
        {"role": "assistant", "content": [], "stopReason": "aborted", "timestamp": 5},
        {"role": "user", "content": "next", "timestamp": 6},
    ]
    await run(server, history, system=None)
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "I will read it",
            "reasoning_content": "hm",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"ä.py","n":1}'}}
            ],
        },
        {"role": "tool", "content": "a\nb", "tool_call_id": "c1"},
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "c2"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BBB"}},
            ],
        },
        {"role": "user", "content": "next"},
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "kind"), [(401, "invalid_api_key"), (429, "rate_limit_exceeded"), (500, "server_error")]
)
async def test_http_errors_end_the_turn_with_error_and_never_leak_the_key(server, status, kind):
    body = {"error": {"message": f"failure {status}", "type": kind, "code": kind}}
    server.replies.append(Fail(status, body, echo_auth=True))
    message = await run(server)
    assert message["stopReason"] == "error"
    assert message["content"] == []
    assert str(status) in message["errorMessage"]
    assert f"failure {status}" in message["errorMessage"]
    assert KEY not in message["errorMessage"]
    assert "(credentials: Bearer ***)" in message["errorMessage"]  # echoed, then redacted
    assert message["usage"]["totalTokens"] == 0


@pytest.mark.asyncio
async def test_a_mid_stream_disconnect_is_an_error_that_keeps_the_partial_text(server):
    events = openai_sse(chunk({"content": "partial "}), chunk({"content": "answer"}), chunk({"content": "never"}))
    server.replies.append(Stream(events, disconnect_after=2))
    message = await run(server)
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "partial answer"}]
    assert message["errorMessage"]


@pytest.mark.asyncio
async def test_a_finish_reason_content_filter_is_an_error(server):
    server.replies.append(Stream(openai_sse(chunk({"content": "x"}), chunk({}, finish="content_filter"))))
    message = await run(server)
    assert (message["stopReason"], message["errorMessage"]) == ("error", "Provider finish_reason: content_filter")


@pytest.mark.asyncio
async def test_abort_ends_a_slow_stream_within_a_second_and_keeps_partial_content(server):
    events = openai_sse(chunk({"content": "first"})) + openai_sse(*[chunk({"content": " more"})] * 50, delay=0.5)
    server.replies.append(Stream(events))
    abort = asyncio.Event()
    seen: list[str] = []

    async def consume() -> dict[str, Any]:
        from sessions_app.llm.assemble import Assembler

        assembler = Assembler(model=MODEL, timestamp_ms=TS)
        async for event in provider(server).stream(
            model=MODEL, messages=[{"role": "user", "content": "go"}], system=None,
            thinking_level="off", max_tokens=100, abort=abort,
        ):  # fmt: skip
            assembler.feed(event)
            seen.append(type(event).__name__)
            if seen.count("TextDelta") == 1:
                abort.set()
        return assembler.message()

    started = time.monotonic()
    message = await asyncio.wait_for(consume(), timeout=5)
    assert time.monotonic() - started < 1.0
    assert message["stopReason"] == "aborted"
    assert message["errorMessage"] == "Request was aborted"
    assert message["content"] == [{"type": "text", "text": "first"}]


@pytest.mark.asyncio
async def test_abort_before_the_response_arrives(server):
    server.replies.append(Stream(openai_sse(chunk({"content": "late"}), delay=3)))
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, abort.set)
    started = time.monotonic()
    message = await run(server, abort=abort)
    assert time.monotonic() - started < 1.0
    assert (message["stopReason"], message["content"]) == ("aborted", [])


@pytest.mark.asyncio
async def test_debug_logging_of_the_sdk_does_not_contain_the_key(server, caplog):
    server.replies.append(Fail(401, {"error": {"message": "bad key"}}, echo_auth=True))
    with caplog.at_level(logging.DEBUG):
        message = await run(server)
    assert message["stopReason"] == "error"
    assert caplog.records  # the SDK did log the request
    assert KEY not in caplog.text
    assert KEY not in repr(provider(server))
    assert KEY not in str(provider(server))
