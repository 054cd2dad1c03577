"""Models and providers from settings; the offline demo model when no key is set.

Keys are wrapped in :class:`~sessions_app.llm.base.Secret` as soon as they are read, so no repr,
str, log line or error message built from these objects can contain one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sessions_app.llm.base import ModelInfo, Pricing, Provider, Secret
from sessions_app.llm.demo import DEMO_MODEL, DemoProvider

# A small default list; PIWEB_LLM_MODELS (JSON) replaces it. Costs are $ per million tokens.
DEFAULT_MODELS = (
    ModelInfo("gpt-4.1", "GPT-4.1", "openai-completions", "openai", 1047576, 32768, False, True, Pricing(2, 8, 0.5)),
    ModelInfo(
        "gpt-4.1-mini", "GPT-4.1 mini", "openai-completions", "openai", 1047576, 32768, False, True,
        Pricing(0.4, 1.6, 0.1),
    ),
    ModelInfo(
        "claude-sonnet-4-5", "Claude Sonnet 4.5", "anthropic-messages", "anthropic", 200000, 64000, True, True,
        Pricing(3, 15, 0.3, 3.75),
    ),
    ModelInfo(
        "claude-haiku-4-5", "Claude Haiku 4.5", "anthropic-messages", "anthropic", 200000, 64000, True, True,
        Pricing(1, 5, 0.1, 1.25),
    ),
)  # fmt: skip

_API_FOR_PROVIDER: dict[str, Literal["openai-completions", "anthropic-messages"]] = {
    "openai": "openai-completions",
    "anthropic": "anthropic-messages",
}


class UnknownModel(LookupError):
    pass


def model_from_json(data: Mapping[str, Any]) -> ModelInfo:
    """One PIWEB_LLM_MODELS item, in pi's models.json shape (id, provider, contextWindow, ...)."""
    provider = str(data["provider"])
    cost = data.get("cost") or {}
    return ModelInfo(
        id=str(data["id"]),
        name=str(data.get("name") or data["id"]),
        api=_API_FOR_PROVIDER[provider],
        provider=provider,
        context_window=int(data["contextWindow"]),
        max_tokens=int(data.get("maxTokens", 16384)),
        reasoning=bool(data.get("reasoning", False)),
        images="image" in (data.get("input") or ["text"]),
        cost=Pricing(
            float(cost.get("input", 0)),
            float(cost.get("output", 0)),
            float(cost.get("cacheRead", 0)),
            float(cost.get("cacheWrite", 0)),
        ),
    )


@dataclass(frozen=True, slots=True)
class Registry:
    models: tuple[ModelInfo, ...]  # those this server can run
    providers: Mapping[str, Provider] = field(repr=False)  # by ModelInfo.api
    # Every model it lists, runnable or not: a session recorded elsewhere names one whose window
    # and prices are known here even where no key for its provider is set.
    listed: tuple[ModelInfo, ...] = ()

    @property
    def default_model(self) -> ModelInfo:
        return self.models[0]

    def get(self, model_id: str) -> ModelInfo:
        for model in self.models:
            if model.id == model_id:
                return model
        raise UnknownModel(f"unknown model {model_id!r}")

    def resolve(self, *, provider: object, model_id: object) -> ModelInfo:
        """The model to run for provider/model_id: pi's ModelRegistry.find (both must match), or the
        default model when this server does not offer that one, as pi does when a session names a
        model it cannot restore. Missing values (None) name no model, so they give the default too."""
        for model in self.models:
            if model.provider == provider and model.id == model_id:
                return model
        return self.default_model

    def resolve_context(self, chosen: Mapping[str, Any] | None) -> ModelInfo:
        """resolve() for a session context's model: pi's ``{provider, modelId}``, or None when the path
        names none (core.context)."""
        chosen = chosen or {}
        return self.resolve(provider=chosen.get("provider"), model_id=chosen.get("modelId"))

    def describe(self, *, provider: object, model_id: object) -> ModelInfo | None:
        """What this server knows of provider/model_id (both must match), whether or not it can
        run it; None if it lists no such model."""
        return next((m for m in (*self.models, *self.listed) if m.provider == provider and m.id == model_id), None)

    def provider_for(self, model: ModelInfo) -> Provider:
        return self.providers[model.api]


def build_registry(
    *,
    openai_api_key: str = "",
    openai_base_url: str = "",
    anthropic_api_key: str = "",
    anthropic_base_url: str = "",
    models_json: str = "",
    demo_delay: float | None = None,
    max_retries: int = 2,
) -> Registry:
    """Models whose provider has a key, then the demo model (the default when no key is set).

    A provider's SDK is imported only when its key is set: each takes seconds to import, in every
    server and worker process."""
    demo = DemoProvider() if demo_delay is None else DemoProvider(delay=demo_delay)
    providers: dict[str, Provider] = {"demo": demo}
    if openai_api_key:
        from sessions_app.llm.openai_chat import OpenAIChatProvider

        providers["openai-completions"] = OpenAIChatProvider(
            Secret(openai_api_key), openai_base_url or None, max_retries=max_retries
        )
    if anthropic_api_key:
        from sessions_app.llm.anthropic_messages import AnthropicMessagesProvider

        providers["anthropic-messages"] = AnthropicMessagesProvider(
            Secret(anthropic_api_key), anthropic_base_url or None, max_retries=max_retries
        )
    listed = tuple(model_from_json(m) for m in json.loads(models_json)) if models_json else DEFAULT_MODELS
    models = (*(m for m in listed if m.api in providers), DEMO_MODEL)
    return Registry(models=models, providers=providers, listed=listed)


def registry_from_settings() -> Registry:
    """From the PIWEB_* Django settings (piweb/settings.py reads them from the environment)."""
    from django.conf import settings  # lazy: the rest of the package runs without Django

    return build_registry(
        openai_api_key=settings.PIWEB_OPENAI_API_KEY,
        openai_base_url=settings.PIWEB_OPENAI_BASE_URL,
        anthropic_api_key=settings.PIWEB_ANTHROPIC_API_KEY,
        anthropic_base_url=settings.PIWEB_ANTHROPIC_BASE_URL,
        models_json=settings.PIWEB_LLM_MODELS,
        demo_delay=float(settings.PIWEB_DEMO_DELAY),
    )
