"""Recovery of dead turns, compaction (manual and automatic), branch summaries, a real provider over HTTP."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from sessions_app.core import jsjson
from sessions_app.live import streaming
from sessions_app.models import Entry, StreamingTurn
from sessions_app.store import services
from tests.builders import demo_message, stored_message, user
from tests.live.sockets import wait_turns_done
from tests.llm.server import ScriptedServer, Stream, openai_sse

pytestmark = [pytest.mark.django_db(transaction=True)]


def say(session, text: str, parent=services.UNSET):
    return services.entry_append(session=session, payload=user(text, 1), parent_id=parent)


def answer(session, text: str, tokens: int = 10):
    message = demo_message(text)
    message["usage"]["input"] = message["usage"]["totalTokens"] = tokens
    return services.entry_append(session=session, payload={"type": "message", "message": message})


def test_dead_runner_turn_becomes_error_message_with_partial(chat_session):
    u = say(chat_session, "hi")
    turn = StreamingTurn.objects.create(
        public_id=uuid.uuid4(), session=chat_session, parent_id=u.entry_id, status="streaming",
        partial=demo_message("half a rep"), runner=f"{streaming.HOST}:999999:dead", heartbeat_at=timezone.now(),
        model={"api": "demo", "provider": "piweb", "id": "piweb-demo"},
    )  # fmt: skip
    fresh = StreamingTurn.objects.create(
        public_id=uuid.uuid4(), session=chat_session, parent_id=u.entry_id, status="streaming",
        runner="elsewhere:1:x", heartbeat_at=timezone.now(), model={},
    )  # fmt: skip
    assert streaming.recover_stale_turns() == [str(turn.public_id)]
    turn.refresh_from_db()
    assert turn.status == "error"
    msg = stored_message(Entry.objects.get(session=chat_session, entry_id=turn.entry_id))
    assert msg["content"] == [{"type": "text", "text": "half a rep"}]
    assert msg["stopReason"] == "error" and msg["errorMessage"] == streaming.CRASH_MESSAGE
    # A turn of another host is stale only once its heartbeat is old.
    StreamingTurn.objects.filter(pk=fresh.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert streaming.recover_stale_turns() == [str(fresh.public_id)]
    fresh.refresh_from_db()
    assert stored_message(Entry.objects.get(session=chat_session, entry_id=fresh.entry_id))["content"] == []
    assert not StreamingTurn.objects.filter(status__in=streaming.ACTIVE).exists()


def test_recover_turns_command_all(chat_session):
    from django.core.management import call_command

    u = say(chat_session, "hi")
    StreamingTurn.objects.create(
        public_id=uuid.uuid4(), session=chat_session, parent_id=u.entry_id, status="queued", model={}
    )
    call_command("recover_turns", "--all")
    assert not StreamingTurn.objects.filter(status__in=streaming.ACTIVE).exists()
    assert Entry.objects.filter(session=chat_session, role="assistant").count() == 1


@pytest.mark.asyncio
async def test_manual_compaction_with_focus(settings, chat_session, alice_async, turn_worker):
    settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS = 50

    def build():
        for i in range(6):
            say(chat_session, f"question {i} " + "words " * 60)
            answer(chat_session, f"answer {i} " + "more " * 60)

    await sync_to_async(build)()
    leaf = (await chat_session.__class__.objects.aget(pk=chat_session.pk)).leaf_id
    response = await alice_async.post(
        f"/sessions/{chat_session.public_id}/chat/compact/", {"instructions": "focus on answers"}
    )
    assert response.status_code == 204
    entry = await Entry.objects.aget(session=chat_session, type="compaction")
    data = jsjson.loads(entry.raw)
    assert list(data) == ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore",
                          "details", "fromHook"]  # fmt: skip
    assert data["parentId"] == leaf and data["fromHook"] is False and data["tokensBefore"] > 0
    assert "piweb demo model" in data["summary"]
    assert await Entry.objects.filter(session=chat_session, entry_id=data["firstKeptEntryId"]).aexists()
    # Nothing left to compact right after a compaction.
    again = await alice_async.post(f"/sessions/{chat_session.public_id}/chat/compact/", {})
    assert again.status_code == 409


@pytest.mark.asyncio
async def test_automatic_compaction_past_window_minus_reserve(settings, chat_session, alice_async, turn_worker):
    settings.PIWEB_COMPACTION_RESERVE_TOKENS = 128000 - 100  # the demo window is 128000
    settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS = 20

    def build():
        for i in range(3):
            say(chat_session, f"q{i} " + "w " * 100)
            answer(chat_session, f"a{i} " + "x " * 100)

    await sync_to_async(build)()
    await alice_async.post(f"/sessions/{chat_session.public_id}/chat/send/", {"text": "and now? " + "z " * 300})
    await wait_turns_done(chat_session)
    for _ in range(250):  # the compaction runs right after the reply is saved
        last = await Entry.objects.filter(session=chat_session).order_by("-seq").afirst()
        if last is not None and last.type == "compaction":
            break
        await asyncio.sleep(0.02)
    assert last is not None and last.type == "compaction"
    reply = await Entry.objects.filter(session=chat_session, role="assistant").order_by("-seq").afirst()
    assert reply is not None and last.parent_id == reply.entry_id


@pytest.mark.asyncio
async def test_navigate_with_branch_summary(chat_session, alice_async, turn_worker):
    def build():
        u1 = say(chat_session, "root question")
        a1 = answer(chat_session, "root answer")
        say(chat_session, "explored branch " + "detail " * 20)
        answer(chat_session, "branch answer")
        return u1, a1

    u1, a1 = await sync_to_async(build)()
    response = await alice_async.post(
        f"/sessions/{chat_session.public_id}/chat/navigate/", {"entry": a1.entry_id, "summarize": "1"}
    )
    assert response.status_code == 200 and 'id="chat-composer"' in response.content.decode()
    summary = await Entry.objects.aget(session=chat_session, type="branch_summary")
    data = jsjson.loads(summary.raw)
    assert data["parentId"] == a1.entry_id and data["fromId"] == a1.entry_id and data["fromHook"] is False
    assert data["summary"].startswith("The user explored a different conversation branch")
    await chat_session.arefresh_from_db()
    assert chat_session.leaf_id == summary.entry_id
    # Navigating to a user message puts its text in the composer and the leaf on its parent.
    response = await alice_async.post(f"/sessions/{chat_session.public_id}/chat/navigate/", {"entry": u1.entry_id})
    assert "root question" in response.content.decode()
    await chat_session.arefresh_from_db()
    assert chat_session.leaf_id == u1.parent_id


@pytest.mark.asyncio
async def test_model_and_thinking_changes_mid_conversation_use_real_provider(
    settings, chat_session, alice_async, turn_worker
):
    server = ScriptedServer().start()
    try:
        settings.PIWEB_OPENAI_API_KEY = "sk-test-key"
        settings.PIWEB_OPENAI_BASE_URL = f"{server.url}/v1"
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-mini"}
        server.replies.append(
            Stream(
                openai_sse(
                    {**chunk, "choices": [{"index": 0, "delta": {"content": "Hello from "}, "finish_reason": None}]},
                    {**chunk, "choices": [{"index": 0, "delta": {"content": "OpenAI"}, "finish_reason": "stop"}]},
                    {
                        **chunk,
                        "choices": [],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
                    },
                )
            )
        )
        base = f"/sessions/{chat_session.public_id}/chat/"
        assert (await alice_async.post(base + "model/", {"model": "gpt-4.1-mini"})).status_code == 204
        assert (await alice_async.post(base + "thinking/", {"level": "high"})).status_code == 204
        assert (await alice_async.post(base + "model/", {"model": "nope"})).status_code == 400
        await alice_async.post(base + "send/", {"text": "hi there"})
        await wait_turns_done(chat_session)
        reply = await Entry.objects.aget(session=chat_session, role="assistant")
        msg = stored_message(reply)
        assert (msg["api"], msg["provider"], msg["model"]) == ("openai-completions", "openai", "gpt-4.1-mini")
        assert msg["content"] == [{"type": "text", "text": "Hello from OpenAI"}]
        assert msg["usage"]["input"] == 12 and msg["usage"]["output"] == 3 and msg["usage"]["cost"]["total"] > 0
        [request] = server.requests
        assert request.body["model"] == "gpt-4.1-mini"
        assert json.dumps(request.body["messages"]).count("hi there") == 1
        types = [e.type async for e in Entry.objects.filter(session=chat_session).order_by("seq")]
        assert types[-4:] == ["model_change", "thinking_level_change", "message", "message"]
    finally:
        server.stop()
