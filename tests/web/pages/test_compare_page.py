"""The compare page (/sessions/<id>/compare/?a=&b=): two branches side by side from their common
ancestor, a word diff where paired messages differ, each side's cost and tokens, and its entry points."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from sessions_app.models import Session
from sessions_app.render import compare as render_compare
from sessions_app.store import services, shares
from tests.builders import assistant, tool_call, tool_result, user
from tests.xss import ALL, assert_no_live_payload

pytestmark = pytest.mark.django_db


def cost(total: float, tokens: int) -> dict[str, Any]:
    return {"input": tokens - 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": total}}  # fmt: skip


@pytest.fixture
def forked(alice) -> tuple[Session, dict[str, str]]:
    """q, then two tries: x (a bash call and its result) and y (another call and result), then answers."""
    session = services.session_create(owner=alice, name="forked")
    ids: dict[str, str] = {}

    def add(name: str, payload: dict[str, Any], parent: str | None) -> None:
        ids[name] = services.entry_append(session=session, payload=payload, parent_id=parent, author=alice).entry_id

    add("q", user("fix the build", ts=1_765_000_000_000), None)
    add("x1", assistant("I will run the quick tests", ts=1_765_000_001_000, call=tool_call("c1", "make test"),
                        usage=cost(0.25, 1000)), ids["q"])  # fmt: skip
    add("x2", tool_result("c1", "3 passed", 1_765_000_002_000), ids["x1"])
    add("x3", assistant("All green <script>window.__xss=1</script>", ts=1_765_000_003_000,
                        usage=cost(0.5, 2000)), ids["x2"])  # fmt: skip
    add("y1", assistant("I will run the slow tests", ts=1_765_000_004_000, call=tool_call("c2", "make check"),
                        usage=cost(0.125, 500)), ids["q"])  # fmt: skip
    add("y2", tool_result("c2", "1 failed", 1_765_000_005_000), ids["y1"])
    session.refresh_from_db()
    return session, ids


def page(client: Client, session: Session, **params: str) -> Any:
    return client.get(reverse("sessions:compare", args=[session.public_id]), params)


def test_both_sides_from_the_common_ancestor_with_tool_calls_and_results(alice_client, forked):
    session, ids = forked
    response = page(alice_client, session, a=ids["x3"], b=ids["y2"])
    assert response.status_code == 200
    html = response.content.decode()
    assert "data-ancestor>From their common ancestor" in html and ids["q"] in html
    rows = re.findall(r'<div class="compare-row" role="row" data-row>(.*?)\n    </div>', html, re.S)
    # x1 (with its result) beside y1 (with its result), then x3 beside nothing; q is not drawn.
    assert len(rows) == 2
    first_a, first_b = rows[0].split('<div class="compare-cell side-b"')
    assert f'data-id="{ids["x1"]}"' in first_a and "make test" in first_a and "3 passed" in first_a
    assert f'data-id="{ids["y1"]}"' in first_b and "make check" in first_b and "1 failed" in first_b
    assert f'data-id="{ids["x3"]}"' in rows[1]
    assert f'data-id="{ids["q"]}"' not in html


def test_each_side_shows_its_cost_and_tokens_summed_from_the_lines(alice_client, forked):
    session, ids = forked
    lines = {e.entry_id: json.loads(e.raw) for e in session.entries.all()}
    html = page(alice_client, session, a=ids["x3"], b=ids["y2"]).content.decode()
    sides = re.findall(r'data-side="(A|B)">(.*?)</div>\n</div>', html, re.S)
    assert [name for name, _ in sides] == ["A", "B"]
    for (_, body), names in zip(sides, (("x1", "x2", "x3"), ("y1", "y2")), strict=True):
        usages = [lines[ids[n]]["message"].get("usage") for n in names]
        spent = sum(u["cost"]["total"] for u in usages if u)
        tokens = sum(u["totalTokens"] for u in usages if u)
        assert f"<span data-cost>${spent:.4f}</span>" in body
        assert f"{tokens:,} tokens" in body
        assert f"<span data-entries>{len(names)} entries</span>" in body


def test_messages_that_differ_get_a_word_diff(alice_client, forked):
    session, ids = forked
    html = page(alice_client, session, a=ids["x3"], b=ids["y2"]).content.decode()
    assert '<del class="wd">quick</del>' in html
    assert '<ins class="wd">slow</ins>' in html
    assert "I will run the " in html


def test_message_text_is_escaped_in_the_diff(alice, alice_client):
    session = services.session_create(owner=alice, name="hostile")
    root = services.entry_append(session=session, payload=user("go"), author=alice).entry_id
    a = services.entry_append(session=session, payload=assistant("one " + ALL), parent_id=root, author=alice)
    b = services.entry_append(session=session, payload=assistant("two " + ALL + " more"), parent_id=root, author=alice)
    html = page(alice_client, session, a=a.entry_id, b=b.entry_id).content.decode()
    assert "data-word-diff" in html
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert_no_live_payload(html)


def test_word_diff_html_escapes_every_run():
    html = render_compare.diff_html([("=", "<b>"), ("-", "<script>x</script>"), ("+", "&")])
    assert html == '&lt;b&gt;<del class="wd">&lt;script&gt;x&lt;/script&gt;</del><ins class="wd">&amp;</ins>'


def test_b_defaults_to_the_session_leaf(alice_client, forked):
    session, ids = forked
    assert session.leaf_id == ids["y2"]
    html = page(alice_client, session, a=ids["x3"]).content.decode()
    assert f'name="b" value="{ids["y2"]}"' in html
    assert f'data-id="{ids["y1"]}"' in html


def test_down_follows_b_to_its_newest_leaf(alice_client, forked):
    session, ids = forked
    html = page(alice_client, session, a=ids["x3"], b=ids["y1"], down="1").content.decode()
    assert f'name="b" value="{ids["y2"]}"' in html
    assert f'data-id="{ids["y1"]}"' in html and "1 failed" in html  # y2, the result, under y1's call
    assert page(alice_client, session, a=ids["x3"], b="nope", down="1").status_code == 404


def test_the_same_entry_twice_draws_no_rows(alice_client, forked):
    session, ids = forked
    html = page(alice_client, session, a=ids["x3"], b=ids["x3"]).content.decode()
    assert "data-no-rows" in html


def test_an_unknown_entry_is_a_404(alice_client, forked):
    session, ids = forked
    assert page(alice_client, session, a="nope", b=ids["x3"]).status_code == 404
    assert page(alice_client, session, a=ids["x3"], b="nope").status_code == 404
    assert page(alice_client, session, a=ids["x3"], b="bad\x00id").status_code == 400  # no id holds a NUL


def test_outsiders_get_a_404_and_a_share_link_cannot_reach_it(alice, bob_client, forked):
    session, ids = forked
    assert page(bob_client, session, a=ids["x3"], b=ids["y2"]).status_code == 404
    anonymous = page(Client(), session, a=ids["x3"], b=ids["y2"])
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    _, token = shares.share_create(session=session, user=alice)
    visitor = Client()
    shared = visitor.get(f"/s/{token}/").content.decode()
    assert "compare with sibling" not in shared and "Compare with leaf" not in shared
    assert visitor.get(f"/s/{token}/compare/", {"a": ids["x3"], "b": ids["y2"]}).status_code == 404
    assert page(visitor, session, a=ids["x3"], b=ids["y2"]).status_code == 302


def test_reachable_from_the_sibling_switcher_and_the_actions(alice_client, forked):
    session, ids = forked
    html = alice_client.get(reverse("sessions:detail", args=[session.public_id]), {"leaf": ids["x3"]}).content.decode()
    base = reverse("sessions:compare", args=[session.public_id])
    # x1's alternative is y1: the branch read (to x3) against y1's newest leaf.
    assert f'href="{base}?a={ids["x3"]}&amp;b={ids["y1"]}&amp;down=1"' in html
    assert "data-compare-sibling" in html
    assert f'href="{base}?a={ids["x3"]}&amp;b={ids["y2"]}"' in html  # x3 with the session's leaf


def test_long_branches_come_a_page_at_a_time(alice, alice_client, generated):
    data = generated(entries=400, seed=3, branch_prob=0.02)
    lines = [json.loads(raw) for raw in data.decode().splitlines()[1:]]
    session_id = alice_client.post("/api/sessions/import", {"file": SimpleUploadedFile("s.jsonl", data)}).json()["id"]
    session = Session.objects.get(public_id=session_id)
    leaf = lines[-1]["id"]
    root = lines[0]["id"]
    html = page(alice_client, session, a=leaf, b=root).content.decode()
    assert html.count("data-row>") <= render_compare.PAGE
    more = re.search(r'hx-get="([^"]+)"[^>]*data-compare-more', html)
    assert more is not None
    htmx = Client(headers={"HX-Request": "true"})
    htmx.force_login(alice)
    part = htmx.get(more.group(1).replace("&amp;", "&")).content.decode()
    assert "<html" not in part and "data-row>" in part
