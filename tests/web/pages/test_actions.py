"""Node and session actions: continue, label, fork, rename, delete, append, export; CSRF; bob gets 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.store import selectors
from tests.worlds import Tree, detail

pytestmark = pytest.mark.django_db


def post(client: Any, tree: Tree, action: str, **data: str) -> Any:
    return client.post(f"/sessions/{tree.session.public_id}/{action}/", data)


def test_continue_from_a_user_message_moves_the_leaf_to_its_parent_and_fills_the_composer(alice_client, tree):
    r = post(alice_client, tree, "continue", entry=tree.ids["u2b"])
    assert r.status_code == 302
    tree.session.refresh_from_db()
    assert tree.session.leaf_id == tree.ids["a1"]
    html = alice_client.get(r["Location"]).content.decode()
    assert "And in Go?</textarea>" in html


def test_continue_from_an_assistant_message_makes_it_the_leaf(htmx_client, tree):
    r = post(htmx_client, tree, "continue", entry=tree.ids["a2b"])
    assert r.status_code == 200 and "HX-Location" in r.headers
    tree.session.refresh_from_db()
    assert tree.session.leaf_id == tree.ids["a2b"]


def test_label_set_and_clear(alice_client, tree):
    post(alice_client, tree, "label", entry=tree.ids["a1"], label="  answer  ")
    assert selectors.labels(session=tree.session)[tree.ids["a1"]] == "answer"
    post(alice_client, tree, "label", entry=tree.ids["a1"], label="answer", clear="1")
    assert tree.ids["a1"] not in selectors.labels(session=tree.session)


def test_fork_makes_a_new_session_with_the_path(alice_client, alice, tree):
    r = post(alice_client, tree, "fork", entry=tree.ids["a2b"])
    fork = Session.objects.exclude(pk=tree.session.pk).get(owner=alice)
    assert r.status_code == 302 and fork.public_id in r["Location"]
    assert fork.leaf_id is not None
    assert fork.parent_session_id == tree.session.pk


def test_rename_append_and_delete(alice_client, tree):
    post(alice_client, tree, "rename", name="Renamed <b>x</b>")
    tree.session.refresh_from_db()
    assert tree.session.name == "Renamed <b>x</b>"
    assert "Renamed &lt;b&gt;x&lt;/b&gt;" in alice_client.get(detail(tree)).content.decode()
    r = post(alice_client, tree, "append", text="next question")
    tree.session.refresh_from_db()
    assert selectors.entry_get(session=tree.session, entry_id=tree.session.leaf_id).preview == "user: next question"
    assert r.status_code == 302
    confirm = alice_client.get(f"/sessions/{tree.session.public_id}/delete/")
    assert confirm.status_code == 200 and "Delete this session?" in confirm.content.decode()
    r = post(alice_client, tree, "delete")
    assert r.status_code == 302
    assert not Session.objects.filter(pk=tree.session.pk).exists()


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "http://testserver.evil.example/", "/\\evil.example",
     "javascript:alert(1)", "ftp://testserver/"],
)  # fmt: skip
def test_rename_next_goes_only_to_this_site(alice_client, htmx_client, tree, target):
    """Another site's `next` is ignored: the session page instead. (With htmx the header is swapped
    in place: no redirect at all.)"""
    page = f"/sessions/{tree.session.public_id}/"
    r = post(alice_client, tree, "rename", name="x", next=target)
    assert r.status_code == 302 and r["Location"] == page
    r = post(htmx_client, tree, "rename", name="y", next=target)
    assert (
        r.status_code == 200 and "HX-Location" not in r and "HX-Redirect" not in r and "evil" not in r.content.decode()
    )


def test_rename_next_on_this_site_is_followed(alice_client, tree):
    for target in ("/sessions/?q=x", "http://testserver/teams/"):
        r = post(alice_client, tree, "rename", name="x", next=target)
        assert r.status_code == 302 and r["Location"] == target


def test_sign_in_and_out_next_go_only_to_this_site(alice):
    """The other `next` redirects (Django's sign-in and sign-out views) check the target too."""
    client = Client()
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-pw", "next": "https://evil.example/"})
    assert r.status_code == 302 and r["Location"] == "/"
    r = client.post("/accounts/logout/", {"next": "//evil.example/"})
    assert "evil" not in r.get("Location", "")


def test_every_change_needs_csrf(alice, tree):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    for action, data in [
        ("continue", {"entry": tree.ids["a1"]}),
        ("label", {"entry": tree.ids["a1"], "label": "x"}),
        ("fork", {"entry": tree.ids["a1"]}),
        ("rename", {"name": "x"}),
        ("append", {"text": "x"}),
        ("delete", {}),
    ]:
        assert post(client, tree, action, **data).status_code == 403, action
    assert client.post("/import/", {}).status_code == 403


def test_bob_cannot_change_alices_session(bob_client, tree):
    for action, data in [
        ("continue", {"entry": tree.ids["a1"]}),
        ("label", {"entry": tree.ids["a1"], "label": "x"}),
        ("fork", {"entry": tree.ids["a1"]}),
        ("rename", {"name": "x"}),
        ("append", {"text": "x"}),
        ("delete", {}),
    ]:
        assert post(bob_client, tree, action, **data).status_code == 404, action
    assert Session.objects.filter(pk=tree.session.pk).exists()


def test_actions_on_unknown_entries_are_404(alice_client, tree):
    assert post(alice_client, tree, "continue", entry="nope").status_code == 404
    assert post(alice_client, tree, "label", entry="nope", label="x").status_code == 404


def test_gets_are_refused_on_actions(alice_client, tree):
    assert alice_client.get(f"/sessions/{tree.session.public_id}/label/").status_code == 405


def test_exports(alice_client, tree):
    r = alice_client.get(f"/sessions/{tree.session.public_id}/export.jsonl")
    body = b"".join(r.streaming_content).decode()
    assert body == "".join(selectors.export_lines(session=tree.session))
    assert "attachment" in r["Content-Disposition"]
    html = b"".join(alice_client.get(f"/sessions/{tree.session.public_id}/export.html").streaming_content).decode()
    assert 'class="piweb-entries"' in html and "<script src=" not in html and "://" not in html.split("<script", 1)[0]


def test_the_page_and_the_api_name_an_export_as_pi_names_the_file(alice_client, tree):
    """One rule: <header timestamp, ':' and '.' as '-'>_<session id>.jsonl (the page used to name it
    after the id alone); pi's HTML export of that file is pi-session-<same>.html."""
    sid = tree.session.public_id
    stem = tree.session.created.replace(":", "-").replace(".", "-") + "_" + sid
    page = alice_client.get(f"/sessions/{sid}/export.jsonl")
    api = alice_client.get(f"/api/sessions/{sid}/export.jsonl")
    assert page["Content-Disposition"] == api["Content-Disposition"] == f'attachment; filename="{stem}.jsonl"'
    assert b"".join(page.streaming_content) == b"".join(api.streaming_content)
    html = alice_client.get(f"/sessions/{sid}/export.html")
    assert html["Content-Disposition"] == f'attachment; filename="pi-session-{stem}.html"'
