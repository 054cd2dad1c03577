"""Demo sessions for a newcomer's first look, built through the services like any other session."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import User

from sessions_app.models import Session
from sessions_app.store import services

# Message times (Unix ms) a few seconds apart from an hour ago, restarted by each demo load; each
# session's creation time is taken from it too, so no session is modified before it was created.
_clock = itertools.count(int(time.time() * 1000) - 3_600_000, 7_300)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


DEMO_MODEL = ("anthropic", "claude-sonnet-4-5", "anthropic-messages")
CODEX_MODEL = ("openai", "gpt-5.1-codex", "openai-responses")


def _usage(inp: int, out: int) -> dict[str, Any]:
    cost_in, cost_out = round(inp * 3e-6, 6), round(out * 1.5e-5, 6)
    return {
        "input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out,
        "cost": {"input": cost_in, "output": cost_out, "cacheRead": 0, "cacheWrite": 0,
                 "total": round(cost_in + cost_out, 6)},
    }  # fmt: skip


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                           "timestamp": next(_clock)}}  # fmt: skip


def _assistant(
    *blocks: dict[str, Any],
    stop: str = "stop",
    tokens: tuple[int, int] = (1200, 180),
    by: tuple[str, str, str] = DEMO_MODEL,
) -> dict[str, Any]:
    provider, model, api = by
    return {"type": "message", "message": {
        "role": "assistant", "content": list(blocks), "api": api, "provider": provider, "model": model,
        "usage": _usage(*tokens), "stopReason": stop, "timestamp": next(_clock)}}  # fmt: skip


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def _result(call_id: str, name: str, output: str, error: bool = False) -> dict[str, Any]:
    return {"type": "message", "message": {
        "role": "toolResult", "toolCallId": call_id, "toolName": name, "content": [_text(output)],
        "isError": error, "timestamp": next(_clock)}}  # fmt: skip


def demo_sessions_create(*, owner: User) -> list[Session]:
    global _clock
    _clock = itertools.count(int(time.time() * 1000) - 3_600_000, 7_300)
    return [_refactor_session(owner), _small_session(owner)]


def _refactor_session(owner: User) -> Session:
    s = services.session_create(
        owner=owner, name="Fix flaky session-list test", cwd="/home/demo/projects/webapp", created=_iso(next(_clock))
    )

    def add(payload: dict[str, Any]) -> str:
        return services.entry_append(session=s, payload=payload, author=owner).entry_id

    add({"type": "model_change", "provider": DEMO_MODEL[0], "modelId": DEMO_MODEL[1]})
    add({"type": "thinking_level_change", "thinkingLevel": "medium"})
    add(_user("The test `test_session_list_sorted` fails about one run in five. Can you find out why?"))
    add(_assistant(
        {"type": "thinking", "thinking": "Flaky ordering usually means equal sort keys. Check the query first."},
        _text("Let me look at the test and the view it exercises."),
        _call("call_1", "read", path="tests/test_sessions.py"), stop="toolUse"))  # fmt: skip
    add(_result("call_1", "read", "def test_session_list_sorted(client):\n    make(3)\n    assert ..."))
    add(_assistant(_call("call_2", "bash", command="grep -n order_by app/views.py"), stop="toolUse"))
    add(_result("call_2", "bash", "42:    sessions = Session.objects.order_by('-modified')"))
    diagnosis = add(_assistant(_text(
        "Found it: the three sessions are created within the same millisecond, so `-modified` ties and "
        "the database may return them in any order.\n\nTwo options:\n\n1. add a tie-breaker: "
        "`order_by('-modified', '-id')`\n2. make the test create sessions with distinct times.")))  # fmt: skip
    services.label_set(session=s, target_id=diagnosis, label="root cause", author=owner)

    # First branch: fix the test data.
    add(_user("Let's go with option 2, change the test."))
    add(_assistant(_call("call_3", "edit", path="tests/test_sessions.py", oldText="make(3)",
                         newText="make(3, spaced=True)"), stop="toolUse"))  # fmt: skip
    add(_result("call_3", "edit", "Applied 1 edit to tests/test_sessions.py"))
    add(_assistant(_text("Done. The test now spaces the timestamps, but the view can still tie in production.")))

    # Second branch from the diagnosis: fix the query, with a summary of the abandoned branch.
    services.branch_with_summary(
        session=s, entry_id=diagnosis, author=owner,
        summary="The user explored a different conversation branch before returning here.\nSummary of that "
        "exploration:\n\n## Goal\nFix the flaky test.\n\n## Progress\n### Done\n- [x] Spaced test timestamps\n"
        "\n## Next Steps\n1. Prefer a deterministic query instead.",
        details={"readFiles": ["tests/test_sessions.py"], "modifiedFiles": ["tests/test_sessions.py"]},
        from_hook=False,
    )  # fmt: skip
    fix = add(_user("Actually, fix the query instead: production can tie too."))
    add({"type": "model_change", "provider": CODEX_MODEL[0], "modelId": CODEX_MODEL[1]})
    add(_assistant(_call("call_4", "edit", path="app/views.py", oldText="order_by('-modified')",
                         newText="order_by('-modified', '-id')"), stop="toolUse", by=CODEX_MODEL))  # fmt: skip
    add(_result("call_4", "edit", "Applied 1 edit to app/views.py"))
    add(_assistant(_call("call_5", "bash", command="python -m pytest -q tests/test_sessions.py"), stop="toolUse",
                   by=CODEX_MODEL))  # fmt: skip
    add(_result("call_5", "bash", "....................\n20 passed in 1.92s"))
    add(_assistant(_text("All 20 tests pass, 50 runs in a row. The order is now deterministic."), by=CODEX_MODEL))
    services.label_set(session=s, target_id=fix, label="chosen fix", author=owner)

    # Compaction, then more work after it.
    add({"type": "compaction", "firstKeptEntryId": fix, "tokensBefore": 48213, "fromHook": False,
         "summary": "## Goal\nFix the flaky session-list test.\n\n## Progress\n### Done\n- [x] Found the tie "
         "in `order_by('-modified')`\n- [x] Added `-id` as tie-breaker\n\n## Next Steps\n1. Add a "
         "regression test.",
         "details": {"readFiles": ["tests/test_sessions.py"], "modifiedFiles": ["app/views.py"]}})  # fmt: skip
    add({"type": "thinking_level_change", "thinkingLevel": "high"})
    add(_user("Add a regression test that creates sessions in the same millisecond."))
    add(_assistant(_text(
        "Added `test_session_list_ties_are_deterministic`:\n\n```python\ndef test_ties(client, freezer):\n"
        "    make(3)\n    ids = [s.id for s in client.get('/').context['sessions']]\n"
        "    assert ids == sorted(ids, reverse=True)\n```")))  # fmt: skip
    return s


def _small_session(owner: User) -> Session:
    s = services.session_create(
        owner=owner, name="Explain append-only trees", cwd="/home/demo", created=_iso(next(_clock))
    )
    services.entry_append(session=s, payload=_user("Why does pi store sessions as an append-only tree?"))
    first = services.entry_append(
        session=s,
        payload=_assistant(
            _text(
                "Because nothing is ever lost: editing or retrying adds a **sibling branch** instead of "
                "overwriting history, and moving the *leaf* decides which branch the next message continues."
            )
        ),
    )
    services.entry_append(session=s, payload=_user("Give me a one-line version."))
    services.entry_append(session=s, payload=_assistant(_text("History is a tree; the leaf is where you are.")))
    # A retry of the one-liner: a sibling of the first answer's child.
    services.leaf_move(session=s, entry_id=first.entry_id)
    services.entry_append(session=s, payload=_user("Shorter, please, as a haiku."))
    services.entry_append(
        session=s,
        payload=_assistant(_text("Branches never fade —\nthe leaf moves, the past remains,\nappend, never erase.")),
    )
    return s
