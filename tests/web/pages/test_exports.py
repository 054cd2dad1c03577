"""The session's exports, streamed with bounded memory: JSONL byte for byte, pi's HTML export with
the app's markdown rendered on the server, its own Content-Security-Policy, and the size guard that
offers the JSONL instead (web/exports.py, render/export.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import assistant, user
from tests.xss import ALL, assert_no_live_payload

pytestmark = pytest.mark.django_db

ENTRIES = re.compile(r'<script type="application/json" class="piweb-entries">(.*?)</script>', re.S)


def html_of(response) -> str:
    assert response.status_code == 200
    assert response.streaming, "the export must be streamed"
    return b"".join(response.streaming_content).decode()


def records(html: str) -> list[dict[str, Any]]:
    return [record for block in ENTRIES.findall(html) for record in json.loads(block)]


@pytest.fixture
def imported(alice, generated):
    data = generated(entries=300, seed=3, branch_prob=0.1, compactions=2, labels=5)
    result = pipeline.session_import(owner=alice, data=data)
    return result.session, data


def entry_queries(queries) -> int:
    return sum('FROM "sessions_app_entry"' in q["sql"] for q in queries)


@pytest.mark.parametrize("suffix", ["export.jsonl", "export.html"])
def test_exports_are_read_in_batches_and_start_before_the_first_batch(alice_client, imported, monkeypatch, suffix):
    session, _ = imported
    monkeypatch.setattr(selectors, "EXPORT_BATCH", 50)
    response = alice_client.get(f"/sessions/{session.public_id}/{suffix}")
    assert response.streaming
    pieces = iter(response.streaming_content)
    with CaptureQueriesContext(connection) as first:
        assert next(pieces)
    with CaptureQueriesContext(connection) as rest:
        body = b"".join(pieces)
    assert body
    assert entry_queries(first.captured_queries) <= 1  # the head goes out before the entries are read
    batches = -(-session.last_seq // 50)
    assert entry_queries(first.captured_queries) + entry_queries(rest.captured_queries) == batches
    for q in rest.captured_queries:
        if 'FROM "sessions_app_entry"' in q["sql"]:
            assert "LIMIT 50" in q["sql"]


def test_jsonl_stays_byte_identical_in_any_batch_size(alice_client, imported, monkeypatch):
    session, data = imported
    for size in (1, 7, 1000):
        monkeypatch.setattr(selectors, "EXPORT_BATCH", size)
        response = alice_client.get(f"/sessions/{session.public_id}/export.jsonl")
        assert b"".join(response.streaming_content) == data


def test_under_asgi_the_exports_stream_through_an_async_iterator(alice, imported):
    """Django gathers a synchronous iterator into one list before an ASGI server sends a byte."""
    session, data = imported

    async def fetch(path: str):
        client = AsyncClient()
        await client.aforce_login(alice)
        response: Any = await client.get(path)
        assert response.is_async and response.status_code == 200
        return b"".join([piece async for piece in response.streaming_content])

    assert async_to_sync(fetch)(f"/sessions/{session.public_id}/export.jsonl") == data
    html = async_to_sync(fetch)(f"/api/sessions/{session.public_id}/export.html").decode()
    assert len(records(html)) == session.last_seq


def test_the_html_export_holds_every_entry_with_its_card_rendered_by_the_apps_rules(alice_client, alice):
    s = services.session_create(owner=alice, name="Rendered")
    services.entry_append(session=s, payload=user("Plan **it**\n\n- [x] done\n- [ ] todo " + ALL), author=alice)
    reply = "```python\nx = 1\n```\n\n<script>window.__xss=1</script> [a](javascript:alert(1))"
    services.entry_append(session=s, payload=assistant(reply), author=alice)
    html = html_of(alice_client.get(f"/sessions/{s.public_id}/export.html"))
    found = records(html)
    assert [r["t"] for r in found] == ["session_info", "message", "message"]
    card = found[1]["b"][0]["h"]
    assert "<strong>it</strong>" in card and card.count('type="checkbox"') == 2
    assert "&lt;script&gt;" in card
    answer = found[2]["b"][0]["h"]
    assert '<pre class="hl">' in answer and 'href="javascript' not in answer and "&lt;script&gt;" in answer
    for record in found:
        for block in record.get("b", []):
            assert_no_live_payload(block.get("h", ""))
    assert_no_live_payload(html)
    assert "<script>window" not in html and "</script><script>window" not in html


def test_the_html_export_allows_only_its_own_script_and_style(alice_client, tree):
    response = alice_client.get(f"/sessions/{tree.session.public_id}/export.html")
    html = html_of(response)
    policy = response["Content-Security-Policy"]
    assert f'<meta http-equiv="Content-Security-Policy" content="{policy.replace(chr(39), "&#x27;")}">' in html
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy and "default-src 'none'" in policy
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    style = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(script) == 1 and len(style) == 1

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert f"script-src {digest(script[0])}" in policy and f"style-src {digest(style[0])}" in policy


def test_above_the_guard_the_html_export_is_refused_and_offers_the_jsonl(alice_client, tree, settings):
    sid = tree.session.public_id
    settings.PIWEB_EXPORT_HTML_MAX_ENTRIES = tree.session.last_seq - 1
    page = alice_client.get(f"/sessions/{sid}/export.html")
    assert page.status_code == 409 and not page.streaming
    text = page.content.decode()
    assert "<html" in text and "Too large for an HTML export" in text
    assert f'href="/sessions/{sid}/export.jsonl"' in text
    api = alice_client.get(f"/api/sessions/{sid}/export.html")
    assert api.status_code == 409
    body = api.json()
    assert "JSONL" in body["message"]
    assert body["extra"] == {
        "entries": tree.session.last_seq,
        "limit": tree.session.last_seq - 1,
        "jsonl": f"/sessions/{sid}/export.jsonl",
    }
    assert alice_client.get(f"/sessions/{sid}/export.jsonl").status_code == 200
    settings.PIWEB_EXPORT_HTML_MAX_ENTRIES = tree.session.last_seq
    assert alice_client.get(f"/sessions/{sid}/export.html").status_code == 200


def test_an_outsider_gets_404_from_the_api_html_export(bob_client, tree):
    assert bob_client.get(f"/api/sessions/{tree.session.public_id}/export.html").status_code == 404


def test_the_export_is_a_consistent_prefix_while_entries_are_appended(alice_client, alice, imported, monkeypatch):
    session, data = imported
    monkeypatch.setattr(selectors, "EXPORT_BATCH", 100)
    response = alice_client.get(f"/sessions/{session.public_id}/export.jsonl")
    pieces = iter(response.streaming_content)
    head = next(pieces)
    services.entry_append(session=Session.objects.get(pk=session.pk), payload=user("late"), author=alice)
    assert head + b"".join(pieces) == data
