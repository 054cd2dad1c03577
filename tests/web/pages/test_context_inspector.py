"""The context inspector ("What the model saw", /sessions/<id>/context/?entry=ID): pi's context at an
entry, each message's token estimate, the total against the model's window, the next compaction's
cut; for readers of the session and for share links within their scope."""

from __future__ import annotations

import html as html_lib
import json
import math
import random
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.llm.registry import registry_from_settings
from sessions_app.models import Entry, Session
from sessions_app.store import inspector, selectors, services, shares
from sessions_app.store.importing import pipeline
from tests.builders import assistant, user
from tests.generate import generate
from tests.worlds import World

pytestmark = pytest.mark.django_db


def page_url(session: Session, entry_id: str | None = None) -> str:
    url = f"/sessions/{session.public_id}/context/"
    return url + (f"?entry={entry_id}" if entry_id else "")


def items(html: str) -> list[dict[str, str]]:
    found = re.findall(r'<li class="ctx-item [^"]*" data-entry="([^"]*)" data-role="([^"]*)" data-tokens="(\d+)"', html)
    return [{"entry": html_lib.unescape(e), "role": r, "tokens": t} for e, r, t in found]


def units(text: str) -> int:
    """JavaScript's String#length: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def tokens(message: dict[str, Any]) -> int:
    """pi's estimateTokens, written out again from its source (the generated arguments hold no floats)."""
    role, content = message["role"], message.get("content")
    blocks = content if isinstance(content, list) else []
    chars = 0
    if role == "assistant":
        for b in blocks:
            if b["type"] == "text":
                chars += units(b["text"])
            elif b["type"] == "thinking":
                chars += units(b["thinking"])
            elif b["type"] == "toolCall":
                chars += units(b["name"]) + units(json.dumps(b["arguments"], separators=(",", ":"), ensure_ascii=False))
    elif role == "user":
        chars = (
            units(content) if isinstance(content, str) else sum(units(b["text"]) for b in blocks if b["type"] == "text")
        )
    elif role in ("custom", "toolResult"):
        chars = units(content) if isinstance(content, str) else 0
        chars += sum(units(b["text"]) if b["type"] == "text" else 4800 * (b["type"] == "image") for b in blocks)
    elif role in ("branchSummary", "compactionSummary"):
        chars = units(message["summary"])
    elif role == "bashExecution":
        chars = units(message.get("command", "")) + units(message.get("output", ""))
    return math.ceil(chars / 4)


def test_the_messages_are_pis_context_at_each_entry(alice: User):
    data = generate(1500, 3, compactions=2, branch_summary_prob=0.8, custom_prob=0.1, labels=10)
    session = pipeline.session_import(owner=alice, data=data).session
    ids = list(Entry.objects.filter(session=session).order_by("seq").values_list("entry_id", flat=True))
    client = Client()
    client.force_login(alice)
    kinds: set[str] = set()
    for entry_id in [session.leaf_id, *random.Random(3).sample(ids, 12)]:
        assert entry_id is not None
        expected = selectors.session_context(session=session, leaf_id=entry_id)["messages"]
        found = inspector.context_inspect(session=session, entry_id=entry_id, registry=registry_from_settings())
        assert [item.message for item in found.items] == expected
        kinds.update(item.entry_type for item in found.items)
        shown = items(client.get(page_url(session, entry_id)).content.decode())
        assert [row["role"] for row in shown] == [m["role"] for m in expected]
        assert [int(row["tokens"]) for row in shown] == [tokens(m) for m in expected]
        assert found.tokens == sum(tokens(m) for m in expected)
    assert {"compaction", "branch_summary", "message"} <= kinds


def chat(owner: User, sizes: list[int]) -> tuple[Session, list[str]]:
    """A session of turns: a user message of each size in characters, a short assistant reply."""
    s = services.session_create(owner=owner, name="Turns", cwd="/w")
    ids = []
    for n, size in enumerate(sizes):
        ids.append(
            services.entry_append(session=s, payload=user("u" * size, 1_767_600_000_000 + n), author=owner).entry_id
        )
        reply = assistant("a" * 40, 1_767_600_000_500 + n)
        ids.append(services.entry_append(session=s, payload=reply, author=owner).entry_id)
    s.refresh_from_db()
    return s, ids


def test_the_cut_mark_and_the_total(alice: User):
    # 10,000 tokens per user message, 10 per reply: keeping 20,000 tokens from the end reaches u2,
    # a user message, so the cut keeps from u2 and u1 + a1 would be summarized.
    s, ids = chat(alice, [40_000, 40_000, 40_000])
    client = Client()
    client.force_login(alice)
    html = client.get(page_url(s)).content.decode()
    order = re.findall(r'data-cut|data-entry="([^"]+)" data-role', html)
    assert order == [ids[0], ids[1], "", ids[2], ids[3], ids[4], ids[5]]
    assert 'data-tokens="30030"' in html  # the total: 3 x 10,000 + 3 x 10
    # the model (claude-sonnet-4-5): listed, though no key for it is set here, so its window is known
    assert 'data-window="200000"' in html and "of Claude Sonnet 4.5 (15.0%)" in html
    # a short context: pi's cut falls on its first valid point, nothing before it
    small, small_ids = chat(alice, [40, 40])
    order = re.findall(r'data-cut|data-entry="([^"]+)" data-role', client.get(page_url(small)).content.decode())
    assert order == ["", *small_ids]
    # at a compaction: pi's "Already compacted"
    compaction = {"type": "compaction", "summary": "so far", "firstKeptEntryId": small_ids[2], "tokensBefore": 30}
    compacted = services.entry_append(session=small, payload=compaction, author=alice).entry_id
    html = client.get(page_url(small, compacted)).content.decode()
    assert re.findall(r'data-cut|data-entry="([^"]+)" data-role', html) == [compacted, *small_ids[2:]]
    assert "No compaction would cut here: already compacted." in html


def page_after_model_change(owner: User, provider: str, model_id: str) -> str:
    """The inspector at a chat's leaf, after a switch to provider/model_id and one more message."""
    s, _ = chat(owner, [4000])
    change = {"type": "model_change", "provider": provider, "modelId": model_id}
    services.entry_append(session=s, payload=change, author=owner)
    services.entry_append(session=s, payload=user("more", 1_767_600_009_000), author=owner)
    client = Client()
    client.force_login(owner)
    return client.get(page_url(s)).content.decode()


def test_the_window_of_a_model_the_registry_knows(alice: User):
    html = page_after_model_change(alice, "piweb", "piweb-demo")
    window = registry_from_settings().get("piweb-demo").context_window
    assert f'data-window="{window}"' in html and 'data-tokens="1011"' in html
    assert f'<meter class="ctx-meter" min="0" max="{window}" value="1011"' in html


def test_who_may_see_it(world: World):
    s = world.sessions["team"]
    leaf = s.leaf_id
    assert world.client("viewer").get(page_url(s, leaf)).status_code == 200
    assert world.client("viewer").get(page_url(s)).status_code == 200  # the leaf by default
    assert world.client("other_admin").get(page_url(s, leaf)).status_code == 404
    assert world.client(None).get(page_url(s, leaf)).status_code == 302  # to sign in
    assert world.client("viewer").get(page_url(s, "no-such-entry")).status_code == 404


def test_share_links_within_their_scope_only(alice: User):
    s, ids = chat(alice, [40, 40])
    services.leaf_move(session=s, entry_id=ids[1])
    other = services.entry_append(session=s, payload=user("another branch", 1_767_600_100_000), author=alice)
    _, token = shares.share_create(session=s, user=alice, entry_id=ids[3])
    anyone = Client()
    inside = anyone.get(f"/s/{token}/context/?entry={ids[3]}")
    assert inside.status_code == 200
    assert [row["entry"] for row in items(inside.content.decode())] == ids[:4]
    assert "as JSON" not in inside.content.decode()  # the API is for signed-in users
    assert anyone.get(f"/s/{token}/context/?entry={other.entry_id}").status_code == 404
    page = anyone.get(f"/s/{token}/?target={ids[3]}").content.decode()
    assert f'href="/s/{token}/context/?entry={ids[3]}"' in page


def test_every_message_links_to_it(alice: User):
    s, ids = chat(alice, [40])
    client = Client()
    client.force_login(alice)
    page = client.get(f"/sessions/{s.public_id}/").content.decode()
    for entry_id in ids:
        assert f'href="/sessions/{s.public_id}/context/?entry={entry_id}" data-action="context"' in page
    assert f'data-context-url="/sessions/{s.public_id}/context/"' in page
    assert "i context" in page  # the tree's list of keys


def test_a_model_the_server_does_not_list_is_said_to_be_unknown(alice: User):
    html = page_after_model_change(alice, "acme", "mystery-1")
    assert "acme/mystery-1</span> is not in this server's model registry" in html
    assert "data-window" not in html
