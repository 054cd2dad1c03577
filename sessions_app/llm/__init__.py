"""LLM providers for live turns: a small event protocol, pi-shaped message assembly, and adapters.

``base`` defines the streamed events and the Provider protocol, ``assemble`` folds events into pi's
AssistantMessage, ``openai_chat``/``anthropic_messages`` talk to real APIs through the official SDKs,
``demo`` is an offline model, and ``registry`` picks models and keys from settings. No Django import
happens here except in ``registry.registry_from_settings``.
"""

from __future__ import annotations
