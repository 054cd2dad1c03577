"""Assembler, offline demo model, registry and key hygiene (no network)."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import time

import pytest

from sessions_app.llm.assemble import Assembler, collect, parse_arguments
from sessions_app.llm.base import (
    Done,
    Error,
    Event,
    ModelInfo,
    SdkConnection,
    Secret,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from sessions_app.llm.demo import DEMO_MODEL, DemoProvider, demo_reply
from sessions_app.llm.registry import (
    DEFAULT_MODELS,
    Registry,
    UnknownModel,
    build_registry,
    registry_from_settings,
)

MODEL = ModelInfo("m", "M", "openai-completions", "openai", 1000, 100)


def test_the_assembler_builds_blocks_in_stream_order_with_pi_key_order():
    a = Assembler(model=MODEL, timestamp_ms=5)
    events: list[Event] = [
        ThinkingDelta(0, "a", signature=""),
        TextDelta(1, "x"),
        ThinkingDelta(0, "b", signature="s1"),
        ToolCallDelta(2, "start", id="t", name="read"),
        ToolCallDelta(2, "args", json='{"path":'),
        TextDelta(1, "y"),
        ToolCallDelta(2, "args", json=' "p"}'),
        ToolCallDelta(2, "end"),
        Usage(input=3, output=4),
        Usage(output=6),
        Done("toolUse"),
    ]
    for event in events:
        a.feed(event)
    message = a.message()
    assert list(message) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]
    assert message["content"] == [
        {"type": "thinking", "thinking": "ab", "thinkingSignature": "s1"},
        {"type": "text", "text": "xy"},
        {"type": "toolCall", "id": "t", "name": "read", "arguments": {"path": "p"}},
    ]
    assert message["usage"] == {
        "input": 3,
        "output": 6,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 9,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }
    assert message["stopReason"] == "toolUse"


def test_an_aborted_tool_call_keeps_its_block_with_empty_arguments():
    a = Assembler(model=MODEL, timestamp_ms=5)
    a.feed(ToolCallDelta("k", "start", id="t", name="bash"))
    a.feed(ToolCallDelta("k", "args", json='{"command": "rm -'))
    a.feed(Error("Request was aborted", aborted=True))
    message = a.message()
    assert message["content"] == [{"type": "toolCall", "id": "t", "name": "bash", "arguments": {}}]
    assert (message["stopReason"], message["errorMessage"]) == ("aborted", "Request was aborted")
    assert list(message)[-2:] == ["errorMessage", "timestamp"]


def test_parse_arguments_is_forgiving():
    assert parse_arguments("") == {}
    assert parse_arguments("[1]") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}


@pytest.mark.asyncio
async def test_the_demo_model_streams_a_deterministic_reply_offline():
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hello   there"}], "timestamp": 1}]
    events = DemoProvider(delay=0).stream(
        model=DEMO_MODEL, messages=messages, system="sys", thinking_level="off", max_tokens=100, abort=asyncio.Event()
    )
    message = await collect(events, model=DEMO_MODEL, timestamp_ms=7)
    text = demo_reply(messages)
    assert text.startswith("This is the piweb demo model, running offline. You said: “Hello there”.")
    assert message["content"] == [{"type": "text", "text": text}]
    assert (message["api"], message["provider"], message["model"]) == ("demo", "piweb", "piweb-demo")
    assert message["stopReason"] == "stop"
    assert message["usage"]["output"] == len(text.split())
    assert message["usage"]["input"] == 4 + 1  # ceil(13/4) + (3+3)//4
    assert DEMO_MODEL.name == "piweb demo (offline)"


@pytest.mark.asyncio
async def test_the_demo_model_thinks_when_asked_and_honours_abort_quickly():
    abort = asyncio.Event()
    a = Assembler(model=DEMO_MODEL, timestamp_ms=1)
    aborted_at = 0.0
    async for event in DemoProvider(delay=0.05).stream(
        model=DEMO_MODEL, messages=[{"role": "user", "content": "x"}], system=None,
        thinking_level="low", max_tokens=10, abort=abort,
    ):  # fmt: skip
        a.feed(event)
        if isinstance(event, TextDelta) and not abort.is_set():
            abort.set()
            aborted_at = time.monotonic()
    message = a.message()
    assert time.monotonic() - aborted_at < 0.5
    assert message["content"][0] == {"type": "thinking", "thinking": "The user wants a demo reply. "}
    assert message["content"][1] == {"type": "text", "text": "This"}
    assert message["stopReason"] == "aborted"


def test_without_keys_the_registry_offers_only_the_demo_model():
    registry = build_registry()
    assert registry.models == (DEMO_MODEL,)
    assert registry.default_model is DEMO_MODEL
    assert isinstance(registry.provider_for(DEMO_MODEL), DemoProvider)
    with pytest.raises(UnknownModel):
        registry.get("gpt-4.1")


def test_keys_enable_their_providers_and_model_lists_can_be_replaced():
    registry = build_registry(openai_api_key="sk-o", anthropic_api_key="sk-a", anthropic_base_url="http://x")
    assert [m.id for m in registry.models] == [m.id for m in DEFAULT_MODELS] + ["piweb-demo"]
    assert registry.default_model.id == "gpt-4.1"
    assert registry.get("claude-sonnet-4-5").context_window == 200000
    models = json.dumps([{"id": "local", "provider": "openai", "contextWindow": 32768, "input": ["text", "image"]}])
    registry = build_registry(openai_api_key="sk-o", openai_base_url="http://127.0.0.1:1/v1", models_json=models)
    local = registry.get("local")
    assert (local.api, local.context_window, local.max_tokens, local.images) == (
        "openai-completions",
        32768,
        16384,
        True,
    )
    assert [m.id for m in registry.models] == ["local", "piweb-demo"]


def test_keys_never_show_in_repr_str_format_logs_or_pickles(caplog):
    key = "sk-live-SUPERSECRET-123"
    registry = build_registry(openai_api_key=key, anthropic_api_key=key)
    providers = list(registry.providers.values())
    texts = [repr(registry), str(registry), *map(repr, providers), *map(str, providers), f"{providers[1]}"]
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("piweb.test").info("registry %s providers %r", registry, providers)
    texts.append(caplog.text)
    assert all(key not in t for t in texts)
    secret = Secret(key)
    assert (repr(secret), str(secret), f"{secret}", f"{secret!r}") == ("Secret('***')",) * 4
    assert secret.reveal() == key and bool(secret) and not Secret("")
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def two_providers_registry() -> Registry:
    models = json.dumps(
        [
            {"id": "local", "provider": "openai", "contextWindow": 1000},
            {"id": "local", "provider": "anthropic", "contextWindow": 2000},
            {"id": "gpt-4.1", "provider": "openai", "contextWindow": 3000},
        ]
    )
    return build_registry(openai_api_key="sk-o", anthropic_api_key="sk-a", models_json=models)


def test_resolve_picks_the_model_by_provider_and_id_as_pi_does():
    registry = two_providers_registry()
    assert registry.resolve(provider="anthropic", model_id="local").context_window == 2000
    assert registry.resolve(provider="openai", model_id="local").context_window == 1000
    assert registry.resolve(provider="piweb", model_id="piweb-demo") is DEMO_MODEL


@pytest.mark.parametrize(
    ("provider", "model_id"),
    [
        ("openai", "gpt-5"),  # a model this server does not offer
        ("openrouter", "gpt-4.1"),  # known by id, but under another provider
        ("openai", None),
        (None, "gpt-4.1"),
        (None, None),
    ],
)
def test_resolve_falls_back_to_the_default_model_when_the_server_does_not_offer_the_named_one(provider, model_id):
    registry = two_providers_registry()
    assert registry.resolve(provider=provider, model_id=model_id) is registry.default_model


def test_a_turn_ref_and_a_session_context_naming_the_same_model_resolve_alike():
    """The turn row ({api, provider, id}) and pi's session context ({provider, modelId}) are two shapes
    of one reference; with no reference at all (None, {}) both give the default model. The old turn-side
    lookup (streaming.find_model) raised AttributeError on None where the context side gave the default."""
    registry = two_providers_registry()
    ref = {"api": "anthropic-messages", "provider": "anthropic", "id": "local"}
    turn_model = registry.resolve(provider=ref["provider"], model_id=ref["id"])
    assert registry.resolve_context({"provider": "anthropic", "modelId": "local"}) is turn_model
    assert turn_model.provider == "anthropic"
    assert registry.resolve_context(None) is registry.default_model
    assert registry.resolve_context({}) is registry.default_model
    assert registry.resolve_context({"provider": "anthropic", "id": "local"}) is registry.default_model  # not pi's key


def test_registry_from_django_settings(settings):
    settings.PIWEB_OPENAI_API_KEY = ""
    settings.PIWEB_ANTHROPIC_API_KEY = ""
    assert registry_from_settings().models == (DEMO_MODEL,)
    settings.PIWEB_ANTHROPIC_API_KEY = "sk-from-settings"
    settings.PIWEB_DEMO_DELAY = "0"
    registry = registry_from_settings()
    assert registry.default_model.id == "claude-sonnet-4-5"
    assert registry.provider_for(DEMO_MODEL) == DemoProvider(delay=0.0)
    settings.PIWEB_OPENAI_API_KEY = "sk-set"
    settings.PIWEB_OPENAI_BASE_URL = "http://127.0.0.1:1/v1"
    settings.PIWEB_LLM_MODELS = json.dumps([{"id": "local", "provider": "openai", "contextWindow": 1000}])
    registry = registry_from_settings()
    assert [m.id for m in registry.models] == ["local", "piweb-demo"]
    provider = registry.provider_for(registry.get("local"))
    assert isinstance(provider, SdkConnection) and provider.base_url == "http://127.0.0.1:1/v1"


def test_the_demo_delay_defaults_to_the_demo_providers_own():
    assert build_registry().provider_for(DEMO_MODEL) == DemoProvider()


@pytest.mark.asyncio
async def test_the_summarizer_adapter_runs_compaction_through_a_provider():
    from sessions_app.core import compaction
    from sessions_app.llm.summarize import SummaryFailed, summarizer

    summarize = summarizer(provider=DemoProvider(delay=0), model=DEMO_MODEL, abort=asyncio.Event())
    request = compaction.SummaryRequest(system="s", prompt="summarize me", max_tokens=10, reasoning="high")
    text = await summarize(request)
    assert text == demo_reply([{"role": "user", "content": "summarize me"}])
    aborted = asyncio.Event()
    aborted.set()
    with pytest.raises(SummaryFailed, match="Request was aborted"):
        await summarizer(provider=DemoProvider(delay=0.01), model=DEMO_MODEL, abort=aborted)(request)
