"""Controls that must follow the session: the thinking picker after "Continue here", the header's
message count in the live frames."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sessions_app import events
from sessions_app.render import frames
from sessions_app.store import services
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db


def _selected_level(html: str) -> str:
    picker = re.search(r'<select name="level".*?</select>', html, re.S)
    assert picker is not None
    chosen = re.search(r'<option value="([a-z]+)" selected>', picker[0])
    assert chosen is not None
    return chosen[1]


@pytest.mark.django_db(transaction=True)  # an async view: its own connection
def test_after_continue_here_the_thinking_picker_shows_the_level_on_the_new_path(alice, alice_client):
    s = services.session_create(owner=alice)

    def add(payload: dict[str, Any], parent: str | None = services.UNSET) -> str:
        return services.entry_append(session=s, payload=payload, author=alice, parent_id=parent).entry_id

    add(user("q", 1_767_600_000_000))
    a1 = add(assistant("a", 1_767_600_001_000))
    add({"type": "thinking_level_change", "thinkingLevel": "high"})
    add(user("q2", 1_767_600_002_000))
    a2 = add(assistant("a2", 1_767_600_003_000))
    add({"type": "thinking_level_change", "thinkingLevel": "low"}, parent=a1)
    add(user("q3", 1_767_600_004_000))
    add(assistant("a3", 1_767_600_005_000))
    assert _selected_level(alice_client.get(f"/sessions/{s.public_id}/").content.decode()) == "low"
    r = alice_client.post(f"/sessions/{s.public_id}/chat/navigate/", {"entry": a2}, headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert _selected_level(r.content.decode()) == "high"


def test_live_frames_carry_the_message_count_for_the_header(alice, alice_client):
    s = services.session_create(owner=alice)
    services.entry_append(session=s, payload=user("q"), author=alice)
    s.refresh_from_db()
    page = alice_client.get(f"/sessions/{s.public_id}/").content.decode()
    assert "<span data-message-count>1 message</span>" in page
    assert 'data-count="1"' in page
    entry = services.entry_append(session=s, payload=assistant("a"), author=alice)
    s.refresh_from_db()
    event = events.entry_event(
        s, entry_id=entry.entry_id, parent_id=entry.parent_id, entry_type="message", raw=entry.raw, prev_leaf_id=None
    )
    assert event["message_count"] == 2
    assert re.search(r'<div id="session-live" hx-swap-oob="true" hidden [^>]*data-count="2"', frames.entry(event))
    assert 'data-count="2"' in frames.snapshot(session=s, turns=[], viewers=[])
    assert "data-count" not in frames.leaf(events.leaf_event(s), None)  # unknown here: the page keeps its own
