"""Anthropic Messages provider over real HTTP (local scripted server) through the SDK."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sessions_app.llm.anthropic_messages import AnthropicMessagesProvider, thinking_budget
from sessions_app.llm.assemble import Assembler, collect
from sessions_app.llm.base import ModelInfo, Pricing, Secret, TextDelta, ToolSpec
from tests.llm.server import Fail, ScriptedServer, Stream, anthropic_sse

KEY = "sk-ant-test-0123456789-SECRET"
MODEL = ModelInfo(
    "claude-test",
    "Claude test",
    "anthropic-messages",
    "anthropic",
    200000,
    64000,
    True,
    True,
    Pricing(3, 15, 0.3, 3.75),
)
TS = 1_700_000_000_000


def provider(server: ScriptedServer) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(Secret(KEY), server.url, max_retries=0, timeout=10)


def start(input_tokens: int = 50, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-test",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return {"type": "message_start", "message": message}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": d}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str, output: int, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output, **usage},
    }


MESSAGE_STOP = {"type": "message_stop"}


async def run(server: ScriptedServer, messages: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    events = provider(server).stream(
        model=MODEL,
        messages=messages or [{"role": "user", "content": "hi", "timestamp": 1}],
        system=kw.pop("system", "be brief"),
        thinking_level=kw.pop("thinking_level", "off"),
        max_tokens=kw.pop("max_tokens", 4000),
        abort=kw.pop("abort", None) or asyncio.Event(),
        **kw,
    )
    return await collect(events, model=MODEL, timestamp_ms=TS)


@pytest.mark.asyncio
async def test_it_streams_thinking_with_signature_text_and_cache_usage(server):
    server.replies.append(
        Stream(
            anthropic_sse(
                start(input_tokens=30, cache_read=1000, cache_write=200),
                block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                delta(0, {"type": "thinking_delta", "thinking": "Consider "}),
                delta(0, {"type": "thinking_delta", "thinking": "this."}),
                delta(0, {"type": "signature_delta", "signature": "sig-part1"}),
                delta(0, {"type": "signature_delta", "signature": "-part2"}),
                stop(0),
                block_start(1, {"type": "text", "text": ""}),
                delta(1, {"type": "text_delta", "text": "Hi "}),
                delta(1, {"type": "text_delta", "text": "there 😀"}),
                stop(1),
                message_delta("end_turn", 12),
                MESSAGE_STOP,
            )
        )
    )
    message = await run(server, thinking_level="medium")
    cost = {
        "input": 3 / 1e6 * 30,
        "output": 15 / 1e6 * 12,
        "cacheRead": 0.3 / 1e6 * 1000,
        "cacheWrite": 3.75 / 1e6 * 200,
    }
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    assert message == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Consider this.", "thinkingSignature": "sig-part1-part2"},
            {"type": "text", "text": "Hi there 😀"},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": {"input": 30, "output": 12, "cacheRead": 1000, "cacheWrite": 200, "totalTokens": 1242, "cost": cost},
        "stopReason": "stop",
        "timestamp": TS,
    }
    (request,) = server.requests
    assert request.path == "/v1/messages"
    # anthropic 2.x sends the API key as a bearer token (older SDKs used x-api-key)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert "anthropic-version" in request.headers
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert request.body["max_tokens"] == 4000 + 8192
    assert request.body["system"] == "be brief"
    assert request.body["stream"] is True
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]


def test_thinking_budgets_follow_pi():
    assert thinking_budget(level="minimal", max_tokens=1000, model_max_tokens=64000) == (2024, 1024)
    assert thinking_budget(level="xhigh", max_tokens=1000, model_max_tokens=64000) == (17384, 16384)
    # the model's cap wins; the budget then leaves 1024 tokens for the answer
    assert thinking_budget(level="high", max_tokens=1000, model_max_tokens=8000) == (8000, 6976)


@pytest.mark.asyncio
async def test_it_streams_tool_use_input_json(server):
    server.replies.append(
        Stream(
            anthropic_sse(
                start(),
                block_start(0, {"type": "text", "text": ""}),
                delta(0, {"type": "text_delta", "text": "Let me check."}),
                stop(0),
                block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}),
                delta(1, {"type": "input_json_delta", "partial_json": ""}),
                delta(1, {"type": "input_json_delta", "partial_json": '{"command": "ls'}),
                delta(1, {"type": "input_json_delta", "partial_json": ' -la", "timeout": 5}'}),
                stop(1),
                message_delta("tool_use", 20),
                MESSAGE_STOP,
            )
        )
    )
    tools = [
        ToolSpec(
            "bash", "Run", {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
        )
    ]
    message = await run(server, tools=tools)
    assert message["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "toolCall", "id": "toolu_1", "name": "bash", "arguments": {"command": "ls -la", "timeout": 5}},
    ]
    assert message["stopReason"] == "toolUse"
    assert message["usage"]["input"] == 50 and message["usage"]["output"] == 20
    assert server.requests[0].body["tools"] == [
        {
            "name": "bash",
            "description": "Run",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        }
    ]
    assert "thinking" not in server.requests[0].body


@pytest.mark.asyncio
async def test_it_converts_pi_history_to_messages_turns(server):
    server.replies.append(Stream(anthropic_sse(start(), message_delta("end_turn", 1), MESSAGE_STOP)))
    history: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image", "data": "AAA", "mimeType": "image/png"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "thinkingSignature": "sig"},
                {"type": "thinking", "thinking": "unsigned"},
                {
                    "type": "thinking",
                    "thinking": "[Reasoning redacted]",
                    "thinkingSignature": "opaque",
                    "redacted": True,
                },
                {"type": "text", "text": "  "},
                {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "x"}},
                {"type": "toolCall", "id": "t2", "name": "read", "arguments": {"path": "y"}},
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": "read",
            "content": [{"type": "text", "text": "X"}],
            "isError": False,
        },
        {
            "role": "toolResult",
            "toolCallId": "t2",
            "toolName": "read",
            "content": [{"type": "text", "text": "no"}],
            "isError": True,
        },
        {"role": "assistant", "content": []},
        {"role": "user", "content": "thanks"},
    ]
    message = await run(server, history, system=None)
    assert message["stopReason"] == "stop" and message["content"] == []
    body = server.requests[0].body
    assert "system" not in body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "signature": "sig"},
                {"type": "text", "text": "unsigned"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "x"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "y"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "X"}],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "no"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "thanks"},
    ]


@pytest.mark.asyncio
async def test_an_error_event_mid_stream_ends_with_error_and_keeps_partial_text(server):
    server.replies.append(
        Stream(
            anthropic_sse(
                start(),
                block_start(0, {"type": "text", "text": ""}),
                delta(0, {"type": "text_delta", "text": "Half"}),
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        )
    )
    message = await run(server)
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "Half"}]
    assert "Overloaded" in message["errorMessage"]
    assert message["usage"]["input"] == 50


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (429, "rate_limit_error"), (500, "api_error")]
)
async def test_http_errors_end_the_turn_with_error_and_never_leak_the_key(server, status, kind):
    server.replies.append(
        Fail(status, {"type": "error", "error": {"type": kind, "message": f"nope {status}"}}, echo_auth=True)
    )
    message = await run(server)
    assert message["stopReason"] == "error"
    assert message["content"] == []
    assert str(status) in message["errorMessage"] and f"nope {status}" in message["errorMessage"]
    assert KEY not in message["errorMessage"]
    assert "(credentials: Bearer ***)" in message["errorMessage"]


@pytest.mark.asyncio
async def test_a_refusal_stop_reason_is_an_error(server):
    server.replies.append(Stream(anthropic_sse(start(), message_delta("refusal", 3), MESSAGE_STOP)))
    message = await run(server)
    assert (message["stopReason"], message["errorMessage"]) == ("error", "Provider stop_reason: refusal")


@pytest.mark.asyncio
async def test_a_mid_stream_disconnect_is_an_error_that_keeps_partial_content(server):
    events = anthropic_sse(
        start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "cut "}),
        delta(0, {"type": "text_delta", "text": "off"}),
        stop(0),
    )
    server.replies.append(Stream(events, disconnect_after=4))
    message = await run(server)
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "cut off"}]
    assert message["errorMessage"]


@pytest.mark.asyncio
async def test_abort_ends_a_slow_stream_within_a_second_and_keeps_partial_content(server):
    head = anthropic_sse(
        start(), block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "so far"})
    )
    tail = anthropic_sse(*[delta(0, {"type": "text_delta", "text": " more"})] * 50, delay=0.5)
    server.replies.append(Stream(head + tail))
    abort = asyncio.Event()
    assembler = Assembler(model=MODEL, timestamp_ms=TS)
    started = 0.0
    stream = provider(server).stream(
        model=MODEL, messages=[{"role": "user", "content": "go"}], system=None,
        thinking_level="off", max_tokens=100, abort=abort,
    )  # fmt: skip
    async for event in stream:
        assembler.feed(event)
        if isinstance(event, TextDelta) and event.text and not abort.is_set():
            abort.set()
            started = time.monotonic()
    assert time.monotonic() - started < 1.0
    message = assembler.message()
    assert message["stopReason"] == "aborted"
    assert message["errorMessage"] == "Request was aborted"
    assert message["content"] == [{"type": "text", "text": "so far"}]
    assert message["usage"]["input"] == 50  # from message_start, kept on abort
