"""core/usage.py: an assistant message's usage, as pi records it."""

from __future__ import annotations

from sessions_app.core.usage import NONE, Usage, entry_usage, message_usage, total


def _assistant(**usage: object) -> dict[str, object]:
    return {"role": "assistant", "content": [], "usage": usage}


def test_an_assistant_message_gives_its_counts_and_cost_total():
    found = message_usage(
        _assistant(input=10, output=5, cacheRead=100, cacheWrite=7, totalTokens=122, cost={"total": 0.25, "input": 0.1})
    )
    assert found == Usage(10, 5, 100, 7, 122, 0.25)
    assert found.as_json() == {
        "input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 7, "totalTokens": 122, "cost": 0.25,
    }  # fmt: skip


def test_an_older_file_without_total_tokens_sums_the_four_counts_as_pi_does():
    found = message_usage(_assistant(input=1, output=2, cacheRead=3, cacheWrite=4))
    assert found is not None and found.total_tokens == 10 and found.cost == 0.0


def test_other_roles_and_entries_count_nothing_and_bad_values_count_zero():
    assert message_usage({"role": "user", "content": "hi", "usage": {"input": 5}}) is None
    assert entry_usage({"type": "label", "message": _assistant(input=5)}) is None
    assert message_usage({"role": "assistant"}) == NONE
    assert message_usage(_assistant(input="9", output=True, cost={"total": "1"})) == NONE


def test_total_adds_and_skips_none():
    one = Usage(1, 2, 3, 4, 10, 0.5)
    assert total([one, None, one]) == Usage(2, 4, 6, 8, 20, 1.0)
