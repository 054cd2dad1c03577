"""The page behind a share link: the session page's tree explorer and conversation, read-only, and
only what the link may show. A branch link's page (its title and heading too) comes from the path to
its entry and what grows below it; every lazy load checks the token and the scope (404 outside).

tests.worlds.branchy_tree: info - model - u1 - a1 - u2a - a2a - tool - a3a (leaf)
                                                  \\ u2b - a2b (newer; the label on u1 was set here)
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.models import Entry, ShareLink
from sessions_app.store import services, shares
from tests.builders import assistant, user
from tests.worlds import PNG, Tree

pytestmark = pytest.mark.django_db

BRANCH_A = ("u2a", "a2a", "tool", "a3a")
BRANCH_B = ("u2b", "a2b")


def link(tree: Tree, entry: str | None = None) -> str:
    entry_id = tree.ids[entry] if entry else None
    _, token = shares.share_create(session=tree.session, user=tree.session.owner, entry_id=entry_id)
    return f"/s/{token}/"


def get(url: str, status: int = 200, htmx_target: str = "") -> str:
    headers = {"HX-Request": "true", "HX-Target": htmx_target} if htmx_target else {}
    response = Client().get(url, headers=headers)
    assert response.status_code == status, (url, response.status_code)
    return response.content.decode()


def row_ids(html: str) -> set[str]:
    return set(re.findall(r'data-id="([^"]+)"', html))


def title_of(html: str) -> tuple[str, str]:
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    heading = re.search(r'<h1 class="title">(.*?)</h1>', html, re.S)
    assert title and heading
    return title.group(1), heading.group(1)


def test_the_session_pages_tree_and_conversation_read_only(tree):
    html = get(link(tree))
    assert 'id="explorer"' in html and 'id="tree-body"' in html and 'id="conversation"' in html
    assert 'class="lane main"' in html and "li.node" not in html  # the explorer's own lanes
    assert set(tree.ids.values()) - {tree.ids["model"]} <= row_ids(html)
    assert "Use serde_json." in html.split('id="conversation"')[1]  # the session's leaf path
    for action in ("regenerate", "edit", "continue", "label", "fork", "share-branch", "rename", "delete"):
        assert f'data-action="{action}"' not in html
    assert 'id="chat-composer"' not in html and 'id="label-form-template"' not in html
    assert "/sessions/" not in html  # every link stays under the share link
    assert 'class="pane-tabs"' in html


def test_a_branch_link_shows_only_its_branch(tree):
    html = get(link(tree, "u2b"))
    info, label = (Entry.objects.get(session=tree.session, type=t).entry_id for t in ("session_info", "label"))
    inside = {info, *(tree.ids[k] for k in ("model", "u1", "a1", *BRANCH_B))}
    assert row_ids(html) == inside  # the label below a2b is bookkeeping: the leaf reads as a2b
    assert label not in row_ids(html)
    for text in ("And in Rust?", "cargo new", "serde_json"):
        assert text not in html
    assert 'class="sibs"' not in html  # u2a, its sibling, is outside: nothing to switch to
    assert "question" in html  # the label on u1 was set from inside this branch (below a2b)


def test_a_branch_link_leaves_out_labels_set_from_outside(tree):
    assert ">question<" not in get(link(tree, "u2a"))  # set below a2b, outside this branch


def test_the_title_comes_from_the_scope_not_from_a_name_set_on_another_branch(tree):
    services.session_rename(session=tree.session, name="Secret plans", author=tree.session.owner)  # on branch A
    assert "Secret plans" in title_of(get(link(tree)))[0]  # the whole session: its name
    title, heading = title_of(get(link(tree, "u2b")))
    assert "Branchy session" in title and heading == "Branchy session"
    assert "Secret plans" not in get(link(tree, "u2b"))
    # Named below the shared entry: shown in the link's tree, but the title comes from the path to it.
    assert title_of(get(link(tree, "u2a")))[1] == "Branchy session"


def test_a_second_roots_link_is_named_by_its_own_first_message(tree):
    owner = tree.session.owner
    root = services.entry_append(session=tree.session, payload=user("Second root question"), parent_id=None)
    services.entry_append(session=tree.session, payload=assistant("Second root answer"), author=owner)
    tree.ids["root2"] = root.entry_id
    html = get(link(tree, "root2"))
    assert title_of(html)[1] == "Second root question"
    assert "Branchy session" not in html and "How do I" not in html
    assert "Second root answer" in html


def test_a_node_above_the_shared_entry_opens_inside_the_branch(tree):
    url = link(tree, "u2a")  # u2b, beside it, is newer: the newest leaf below u1 is outside
    html = get(f"{url}?target={tree.ids['u1']}")
    assert re.search(rf'id="explorer"[^>]* data-leaf="{tree.ids["a3a"]}"', html)
    assert "Use bufio.Scanner." not in html
    get(f"{url}?target={tree.ids['a2b']}", 404)
    get(f"{url}?leaf={tree.ids['a2b']}", 404)
    get(f"{url}?target=nope", 404)


def test_switching_alternatives_stays_under_the_link(tree):
    url = link(tree)
    html = get(f"{url}?target={tree.ids['u2a']}")
    assert 'class="sibs"' in html
    assert f'href="{url}?target={tree.ids["u2b"]}"' in html


def test_fragments_for_htmx_and_no_search(tree):
    url = link(tree)
    html = get(url, htmx_target="explorer")
    assert "<html" not in html and html.lstrip().startswith('<div id="explorer"')
    html = get(url, htmx_target="tree-body")
    assert "<html" not in html and 'id="tree-body"' in html
    response = Client().get(url, headers={"HX-Request": "true", "HX-Target": "conversation"})
    assert "HX-Request" in response["Vary"] and response["Referrer-Policy"] == "no-referrer"
    assert ShareLink.objects.get().views == 0  # only whole pages count as views
    assert "match" not in get(f"{url}?q=Rust")  # search reads the whole session: not offered here


def test_lazy_loads_check_the_token_and_the_scope(tree):
    url = link(tree, "u2b")
    ids = tree.ids
    # below a1 (inside) the gap shows only the branch's rows
    html = get(f"{url}tree/gap/?node={ids['a1']}")
    assert ids["u2b"] in row_ids(html) and not {ids[k] for k in BRANCH_A} & row_ids(html)
    get(f"{url}tree/gap/?node={ids['a2a']}", 404)
    get(f"{url}tree/branch/?node={ids['u2b']}")
    get(f"{url}tree/branch/?node={ids['u2a']}", 404)
    assert "How do I" in get(f"{url}conversation/earlier/?before={ids['a1']}")
    get(f"{url}conversation/earlier/?before={ids['a3a']}", 404)
    get(f"{url}entries/{ids['tool']}/output/", 404)
    whole = link(tree)
    assert "line 199" in get(f"{whole}entries/{ids['tool']}/output/")
    get(f"/s/pis_unknown/tree/branch/?node={ids['u2b']}", 404)
    ShareLink.objects.update(revoked_at="2026-01-01T00:00:00Z")
    get(f"{url}tree/branch/?node={ids['u2b']}", 404)
    get(f"{whole}entries/{ids['tool']}/output/", 404)


def test_images_load_inside_the_scope_only(tree):
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    owner = tree.session.owner
    services.leaf_move(session=tree.session, entry_id=tree.ids["a2b"])
    shot = services.entry_append(session=tree.session, payload=user("", content=[image]), author=owner)
    inside, outside = link(tree, "u2b"), link(tree, "u2a")
    html = get(f"{inside}?leaf={shot.entry_id}")
    assert f'src="{inside}entries/{shot.entry_id}/image/0/"' in html
    response = Client().get(f"{inside}entries/{shot.entry_id}/image/0/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    get(f"{outside}entries/{shot.entry_id}/image/0/", 404)


def test_a_bounded_number_of_queries(tree, django_assert_max_num_queries):
    url = link(tree, "u2b")
    with django_assert_max_num_queries(20):
        Client().get(url)
