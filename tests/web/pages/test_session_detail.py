"""The session page: full page vs htmx fragments, deep links, filters, search, lazy parts, access."""

from __future__ import annotations

import re

import pytest

from sessions_app.models import Entry
from sessions_app.render import frames
from sessions_app.store import services
from tests.builders import assistant, user
from tests.worlds import detail

pytestmark = pytest.mark.django_db


def test_it_renders_the_full_page_with_tree_and_conversation(alice_client, tree):
    r = alice_client.get(detail(tree))
    html = r.content.decode()
    assert r.status_code == 200
    assert "<html" in html
    assert 'id="explorer"' in html and 'id="tree-body"' in html and 'id="conversation"' in html
    assert "Branchy session" in html
    # The path to the leaf is drawn; the other branch is an alternative at the branch point a1.
    assert f'id="e-{tree.ids["a3a"]}"' in html
    assert f'id="e-{tree.ids["a2b"]}"' not in html
    assert f'id="t-{tree.ids["u2b"]}"' in html  # small trees draw alternatives in full
    assert 'class="badge">question' in html.replace("\n", "")
    # markdown and highlighting, raw HTML off
    assert "<strong>parse</strong>" in html
    assert 'class="hl"' in html
    assert r.headers["Vary"].count("HX-Request") == 1


def test_htmx_requests_get_fragments(htmx_client, tree):
    for target in ("explorer", "tree-body", "conversation"):
        r = htmx_client.get(detail(tree), headers={"HX-Target": target})
        html = r.content.decode()
        assert r.status_code == 200
        assert "<html" not in html
        assert f'id="{target}"' in html
        assert "HX-Request" in r.headers["Vary"]


def test_a_deep_link_opens_that_path_at_the_target(alice_client, tree):
    r = alice_client.get(detail(tree, leaf=tree.ids["a2b"], target=tree.ids["u2b"]))
    html = r.content.decode()
    assert f'data-target="{tree.ids["u2b"]}"' in html
    assert f'id="e-{tree.ids["a2b"]}"' in html
    assert f'id="e-{tree.ids["a3a"]}"' not in html
    assert 'class="msg m-user target"' in html


def test_a_target_alone_opens_the_newest_leaf_under_it(alice_client, tree):
    """pi's findNewestLeaf: labels count (the label on u1 was set while a2b was the leaf), and a leaf
    on a bookkeeping entry reads as its nearest real ancestor."""
    label = Entry.objects.get(session=tree.session, type="label")
    assert label.parent_id == tree.ids["a2b"]
    html = alice_client.get(detail(tree, target=tree.ids["u2b"])).content.decode()
    assert f'data-leaf="{tree.ids["a2b"]}"' in html


def test_a_target_on_the_current_branch_follows_the_session_leaf_even_when_it_is_a_label(alice, alice_client):
    """A label is appended at the leaf and becomes it: opening an entry above it must land on the
    session's leaf (the newest leaf used to skip labels, so the page said it was off the leaf)."""
    session = services.session_create(owner=alice)
    question = services.entry_append(session=session, payload=user("q"), author=alice)
    answer = services.entry_append(session=session, payload=assistant("a"), author=alice)
    label = services.label_set(session=session, target_id=answer.entry_id, label="keep", author=alice)
    session.refresh_from_db()
    assert session.leaf_id == label.entry_id
    html = alice_client.get(f"/sessions/{session.public_id}/", {"target": question.entry_id}).content.decode()
    assert f'data-leaf="{answer.entry_id}"' in html  # the label is read through
    assert "data-following" in html and "off-leaf-note" not in html


def test_branch_points_get_a_sibling_switcher(alice_client, tree):
    html = alice_client.get(detail(tree)).content.decode()
    assert '<span class="sib-pos">1/2</span>' in html
    assert f"target={tree.ids['u2b']}" in html  # the "next" link
    html = alice_client.get(detail(tree, target=tree.ids["u2b"])).content.decode()
    assert '<span class="sib-pos">2/2</span>' in html


def test_tool_results_sit_under_their_call_and_long_output_is_truncated(alice_client, tree):
    html = alice_client.get(detail(tree)).content.decode()
    assert f'id="e-{tree.ids["tool"]}"' not in html  # drawn inside the call
    assert "line 39" in html and "line 150" not in html
    assert "Show all" in html
    full = alice_client.get(f"/sessions/{tree.session.public_id}/entries/{tree.ids['tool']}/output/")
    assert "line 199" in full.content.decode()


@pytest.mark.parametrize(
    ("mode", "present", "absent"),
    [
        ("default", ["u1", "tool"], ["model"]),
        ("no-tools", ["u1"], ["tool", "model"]),
        ("user-only", ["u1", "u2a"], ["a1", "tool"]),
        ("labeled-only", ["u1"], ["u2a"]),
        ("all", ["model", "u1", "tool"], []),
    ],
)
def test_tree_filters(htmx_client, tree, mode, present, absent):
    html = htmx_client.get(detail(tree, filter=mode), headers={"HX-Target": "tree-body"}).content.decode()
    for key in present:
        assert f'id="t-{tree.ids[key]}"' in html, key
    for key in absent:
        assert f'id="t-{tree.ids[key]}"' not in html, key


def test_tree_search_needs_every_word(htmx_client, tree):
    html = htmx_client.get(detail(tree, q="in go"), headers={"HX-Target": "tree-body"}).content.decode()
    assert f'id="t-{tree.ids["u2b"]}"' in html
    assert f'id="t-{tree.ids["u2a"]}"' not in html
    html = htmx_client.get(detail(tree, q="question"), headers={"HX-Target": "tree-body"}).content.decode()
    assert f'id="t-{tree.ids["u1"]}"' in html  # labels are searched too


def test_unknown_sessions_and_entries_are_404(alice_client, bob_client, tree):
    assert alice_client.get("/sessions/nope/").status_code == 404
    assert alice_client.get(detail(tree, target="nope")).status_code == 404
    for url in [
        detail(tree),
        f"/sessions/{tree.session.public_id}/tree/gap/?node={tree.ids['u1']}",
        f"/sessions/{tree.session.public_id}/tree/branch/?node={tree.ids['u2b']}",
        f"/sessions/{tree.session.public_id}/conversation/earlier/?before={tree.ids['a1']}",
        f"/sessions/{tree.session.public_id}/entries/{tree.ids['tool']}/output/",
        f"/sessions/{tree.session.public_id}/entries/{tree.ids['u1']}/image/0/",
        f"/sessions/{tree.session.public_id}/export.jsonl",
        f"/sessions/{tree.session.public_id}/export.html",
        f"/sessions/{tree.session.public_id}/delete/",
    ]:
        assert bob_client.get(url).status_code == 404, url


def test_anonymous_users_are_sent_to_sign_in(client, tree):
    r = client.get(detail(tree))
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_branch_and_gap_fragments(alice_client, tree):
    sid = tree.session.public_id
    html = alice_client.get(f"/sessions/{sid}/tree/branch/?node={tree.ids['u2b']}&d=1").content.decode()
    assert f'id="t-{tree.ids["u2b"]}"' in html and f'id="t-{tree.ids["a2b"]}"' in html
    html = alice_client.get(f"/sessions/{sid}/tree/gap/?node={tree.ids['u2a']}&up=1&d=0").content.decode()
    assert f'id="t-{tree.ids["a1"]}"' in html and f'id="t-{tree.ids["u2a"]}"' not in html


def test_images_are_served_from_their_entry(alice_client, alice, tree):
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
    payload = {"type": "message", "message": {"role": "user", "timestamp": 1, "content": [
        {"type": "text", "text": "see"}, {"type": "image", "data": png, "mimeType": "image/png"}]}}  # fmt: skip
    entry = services.entry_append(session=tree.session, payload=payload, author=alice)
    html = alice_client.get(detail(tree)).content.decode()
    url = f"/sessions/{tree.session.public_id}/entries/{entry.entry_id}/image/1/"
    assert url in html
    r = alice_client.get(url)
    assert r.status_code == 200 and r["Content-Type"] == "image/png" and r.content.startswith(b"\x89PNG")


def test_the_edit_box_holds_pis_editor_text_on_the_page_and_in_the_live_log(alice, alice_client):
    """pi joins a user message's text blocks with nothing (navigateTree); the page used to join
    them with a newline and the live chat log with nothing."""
    session = services.session_create(owner=alice, name="two blocks")
    blocks = [{"type": "text", "text": "first part"}, {"type": "image", "data": "AA==", "mimeType": "image/png"},
              {"type": "text", "text": "second part"}]  # fmt: skip
    services.entry_append(session=session, payload=user("", content=blocks), author=alice)
    session.refresh_from_db()
    edit_box = re.compile(r'aria-label="Edited message"[^>]*>([^<]*)</textarea>')
    page = edit_box.findall(alice_client.get(f"/sessions/{session.public_id}/").content.decode())
    live = edit_box.findall(frames.log(session))
    assert page == live == ["first partsecond part"]
    alice_client.post(f"/sessions/{session.public_id}/continue/", {"entry": session.leaf_id})
    assert alice_client.session[f"draft:{session.public_id}"] == "first partsecond part"


def test_several_roots_get_a_sibling_switcher_too(alice, alice_client):
    """pi's getTree lists a session's roots side by side (a leaf reset starts a new one): they are
    alternatives like the children of a branch point, in file order."""
    session = services.session_create(owner=alice)
    first = services.entry_append(session=session, payload=user("first start", 1_767_600_009_000), author=alice)
    services.entry_append(session=session, payload=assistant("one"), author=alice)
    services.leaf_move(session=session, entry_id=None)
    second = services.entry_append(session=session, payload=user("second start", 1_767_600_000_000), author=alice)
    html = alice_client.get(f"/sessions/{session.public_id}/").content.decode()
    assert '<span class="sib-pos">2/2</span>' in html
    assert f"target={first.entry_id}" in html  # the "previous" link
    html = alice_client.get(f"/sessions/{session.public_id}/", {"target": first.entry_id}).content.decode()
    assert '<span class="sib-pos">1/2</span>' in html
    assert f"target={second.entry_id}" in html
