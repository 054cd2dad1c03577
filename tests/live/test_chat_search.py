"""A chat turn's messages become searchable (issue 18's index upkeep on chat turns): the user's
message and the assistant's reply streamed from a real provider protocol (tests/llm/server.py)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from sessions_app.models import Entry
from sessions_app.store import search
from tests.live.sockets import wait_turns_done
from tests.llm.server import ScriptedServer, Stream, openai_sse

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-mini"}


def _delta(text: str, finish: str | None = None) -> dict[str, Any]:
    return {**CHUNK, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


def _api_hits(user: Any, q: str) -> list[dict[str, Any]]:
    client = Client()
    client.force_login(user)
    response = client.get("/api/search", {"q": q})
    assert response.status_code == 200, response.content
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


async def test_a_chat_turn_s_user_message_and_streamed_reply_are_found(
    settings, chat_session, alice, alice_async, turn_worker
):
    server = ScriptedServer().start()
    try:
        settings.PIWEB_OPENAI_API_KEY = "sk-test-key"
        settings.PIWEB_OPENAI_BASE_URL = f"{server.url}/v1"
        # The reply's planted word arrives split over two deltas: only the assembled text has it.
        server.replies.append(
            Stream(
                openai_sse(
                    _delta("the answer is quok"),
                    _delta("kazreply indeed", "stop"),
                    {**CHUNK, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}},
                )
            )
        )
        base = f"/sessions/{chat_session.public_id}/chat/"
        assert (await alice_async.post(base + "model/", {"model": "gpt-4.1-mini"})).status_code == 204
        before = await sync_to_async(search.search)(user=alice, q="zebraquery")
        assert before.hits == []
        await alice_async.post(base + "send/", {"text": "where is the zebraquery handled?"})
        await wait_turns_done(chat_session)
        asked = await Entry.objects.aget(session=chat_session, role="user")
        reply = await Entry.objects.aget(session=chat_session, role="assistant")
    finally:
        server.stop()

    for word, entry, role in (("zebraquery", asked, "user"), ("quokkazreply", reply, "assistant")):
        found = await sync_to_async(search.search)(user=alice, q=word)
        assert [(h.session_id, h.entry_id, h.role) for h in found.hits] == [
            (chat_session.public_id, entry.entry_id, role)
        ]
        hits = await sync_to_async(_api_hits)(alice, word)
        assert [(h["sessionId"], h["entryId"], h["role"]) for h in hits] == [
            (chat_session.public_id, entry.entry_id, role)
        ]
        assert f"<mark>{word}</mark>" in hits[0]["snippet"].lower()
    # the pieces of the split word were never words of their own
    assert (await sync_to_async(search.search)(user=alice, q="quok")).hits == []
