"""The branch's Files changed page and the tool-call "Show all": who may see them, what they show
(net diffs per file, the calls that made them, the same comment threads as the session page)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sessions_app.render import tools
from sessions_app.store import reviews, services
from tests.builders import assistant, tool_result
from tests.worlds import World
from tests.xss import ALL, PAYLOADS, assert_no_live_payload

pytestmark = pytest.mark.django_db


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def add_calls(world: World, calls: list[tuple[dict[str, Any], bool]], results: list[str] | None = None) -> list[str]:
    """Append each call (an assistant entry) and its result to the team session; the assistant ids
    (and the results' in results)."""
    s = world.sessions["team"]
    owner = world.users["admin"]
    out = []
    for n, (c, error) in enumerate(calls):
        a = services.entry_append(session=s, payload=assistant("", 1_767_600_100_000 + n, call=c), author=owner)
        out.append(a.entry_id)
        result = tool_result(c["id"], "done", 1_767_600_100_500 + n, tool=c["name"], isError=error)
        r = services.entry_append(session=s, payload=result, author=owner)
        if results is not None:
            results.append(r.entry_id)
    return out


def files_url(world: World, leaf: str | None = None) -> str:
    url = f"/sessions/{world.sessions['team'].public_id}/files/"
    return f"{url}?leaf={leaf}" if leaf else url


def test_readers_see_the_page_and_outsiders_get_404(world):
    add_calls(world, [(call("w1", "write", path="src/a.py", content="x = 1\n"), False)])
    assert world.client("viewer").get(files_url(world)).status_code == 200
    assert world.client("other_admin").get(files_url(world)).status_code == 404
    assert world.client(None).get(files_url(world)).status_code == 302  # to sign in
    assert world.client("viewer").get(files_url(world, "no-such-entry")).status_code == 404


def test_net_diffs_per_file_with_the_calls_that_made_them(world):
    ids = add_calls(world, [
        (call("w1", "write", path="src/a.py", content="x = 1\ny = 2\n"), False),
        (call("e1", "edit", path="./src/a.py", oldText="y = 2", newText="y = 3"), False),
        (call("e2", "edit", path="README.md", oldText="old words", newText="new words"), False),
        (call("e3", "edit", path="broken.txt", oldText="a", newText="b"), True),  # failed: no change
    ])  # fmt: skip
    html = world.client("viewer").get(files_url(world)).content.decode()
    paths = re.findall(r'data-file="([^"]+)"', html)
    assert paths == ["src/a.py", "README.md"]
    a_card = re.search(r'data-file="src/a.py".*?</article>', html, re.S)
    assert a_card is not None
    card = a_card.group(0)
    assert "written" in card and card.count('class="dl add"') == 2 and 'class="dl del"' not in card
    assert 'y = </span><span class="mi">3</span>' in card or ">3<" in card
    assert f'data-change="{ids[0]}"' in card and f'data-change="{ids[1]}"' in card
    readme = re.search(r'data-file="README.md".*?</article>', html, re.S)
    assert readme is not None and "old words" in readme.group(0) and "new words" in readme.group(0)
    assert 'class="dl del"' in readme.group(0)


def test_an_earlier_branch_shows_only_its_own_changes(world):
    results: list[str] = []
    ids = add_calls(world, [
        (call("w1", "write", path="first.txt", content="one\n"), False),
        (call("w2", "write", path="second.txt", content="two\n"), False),
    ], results)  # fmt: skip
    html = world.client("viewer").get(files_url(world, results[0])).content.decode()
    assert re.findall(r'data-file="([^"]+)"', html) == ["first.txt"]
    # at the call itself its result is not on the path yet: the call has not changed the file
    html = world.client("viewer").get(files_url(world, ids[0])).content.decode()
    assert re.findall(r'data-file="([^"]+)"', html) == []


def test_threads_are_those_of_the_session_page_and_reviewers_may_comment(world):
    s = world.sessions["team"]
    ids = add_calls(world, [(call("e1", "edit", path="m.go", oldText="a := 1", newText="a := 2"), False)])
    comment = reviews.comment_create(session=s, author=world.users["reviewer"], entry_id=ids[0], body="**why** 2?")
    viewer = world.client("viewer").get(files_url(world)).content.decode()
    assert f'id="comment-{comment.pk}"' in viewer and "<strong>why</strong> 2?" in viewer
    assert 'data-action="comment"' not in viewer
    reviewer = world.client("reviewer").get(files_url(world)).content.decode()
    assert 'data-action="comment"' in reviewer and f'name="entry" value="{ids[0]}"' in reviewer
    detail = world.client("viewer").get(f"/sessions/{s.public_id}/?target={ids[0]}").content.decode()
    assert f'id="comment-{comment.pk}"' in detail
    assert f"/sessions/{s.public_id}/files/" in detail  # linked from the session page
    element_ids = re.findall(r'\sid="([^"]+)"', reviewer)
    assert len(element_ids) == len(set(element_ids))


def test_show_all_draws_a_long_call_whole_for_readers_only(world):
    s = world.sessions["team"]
    old = "\n".join(f"line {i}" for i in range(300))
    ids = add_calls(world, [(call("e1", "edit", path="big.txt", oldText=old, newText=old.upper()), False)])
    detail = world.client("viewer").get(f"/sessions/{s.public_id}/?target={ids[0]}").content.decode()
    url = f"/sessions/{s.public_id}/entries/{ids[0]}/calls/1/"
    assert f'hx-get="{url}"' in detail
    response = world.client("viewer").get(url)
    assert response.status_code == 200 and response.content.decode().count('class="dl') == 600
    assert world.client("viewer").get(url.replace("/calls/1/", "/calls/0/")).status_code == 404  # a text block
    assert world.client("viewer").get(url.replace("/calls/1/", "/calls/9/")).status_code == 404
    assert world.client("other_admin").get(url).status_code == 404


def test_hostile_paths_and_texts_stay_text(world):
    add_calls(world, [
        (call("w1", "write", path=ALL + ".js", content=ALL), False),
        (call("e1", "edit", path=ALL, oldText=ALL, newText=ALL + "!"), False),
    ])  # fmt: skip
    html = world.client("viewer").get(files_url(world)).content.decode()
    assert_no_live_payload(html)
    assert PAYLOADS[0].replace("<", "&lt;").replace(">", "&gt;") in html


def test_show_all_of_a_call_longer_than_even_show_all_draws_says_where_it_stops(world, monkeypatch):
    monkeypatch.setattr(tools, "FULL_LINES", 100)  # the public bound on what "Show all" draws
    s = world.sessions["team"]
    old = "\n".join(f"line {i}" for i in range(300))
    ids = add_calls(world, [(call("e1", "edit", path="big.txt", oldText=old, newText=old.upper()), False)])
    response = world.client("viewer").get(f"/sessions/{s.public_id}/entries/{ids[0]}/calls/1/")
    html = response.content.decode()
    assert response.status_code == 200 and html.count('class="dl') == 100
    assert "Cut at 100 lines." in html and "Show all" not in html
