"""The path state an assistant reply leaves (context.advance_entry): the model it names, with
absent fields absent (JSON.stringify drops them). A reply that repeats the model in force keeps
the very state object, which the stored columns are serialised once for."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.core.context import PathState, advance_entry

IN_FORCE = PathState("high", {"provider": "anthropic", "modelId": "claude"}, "c1")


def reply(**fields: Any) -> dict[str, Any]:
    return {"type": "message", "id": "r", "message": {"role": "assistant", "content": [], **fields}}


def test_a_reply_that_repeats_the_model_keeps_the_state_itself():
    assert advance_entry(IN_FORCE, "message", "r", reply(provider="anthropic", model="claude")) is IN_FORCE


@pytest.mark.parametrize(
    ("fields", "model"),
    [
        ({"provider": "openai", "model": "claude"}, {"provider": "openai", "modelId": "claude"}),
        ({"provider": "anthropic", "model": "opus"}, {"provider": "anthropic", "modelId": "opus"}),
        ({"model": "claude"}, {"modelId": "claude"}),  # no provider: none in the state either
        ({"provider": "anthropic"}, {"provider": "anthropic"}),
        ({}, {}),
        ({"provider": "anthropic", "model": None}, {"provider": "anthropic", "modelId": None}),
    ],
)
def test_a_reply_that_names_another_model_or_leaves_a_field_out_sets_it(fields, model):
    state = advance_entry(IN_FORCE, "message", "r", reply(**fields))
    assert state == PathState("high", model, "c1")
    assert list(state.model or ()) == list(model)  # (the key order JSON gets)


def test_a_state_with_a_partial_model_is_not_taken_for_the_same():
    partial = PathState("off", {"modelId": "claude"}, None)
    state = advance_entry(partial, "message", "r", reply(provider="anthropic", model="claude"))
    assert state.model == {"provider": "anthropic", "modelId": "claude"}
    assert advance_entry(partial, "message", "r", reply(model="claude")) is partial
