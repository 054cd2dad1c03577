"""Label and session_info entries are bookkeeping: pi moves the stored leaf onto each, but the page
reads through them. A label is a chip on its target, a rename a small note, the reader stays on the
leaf after labelling, and the sibling switcher looks through them."""

from __future__ import annotations

import json
import re

import pytest

from sessions_app.models import Entry, Session
from sessions_app.store import demo, services
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db


def _page(client, session: Session, **params: str) -> str:
    return str(client.get(f"/sessions/{session.public_id}/", params).content.decode())


def _chat(alice) -> tuple[Session, str, str]:
    session = services.session_create(owner=alice, name="Chat")
    question = services.entry_append(session=session, payload=user("q", 1_767_600_000_000), author=alice)
    answer = services.entry_append(session=session, payload=assistant("a", 1_767_600_001_000), author=alice)
    return session, question.entry_id, answer.entry_id


def test_labelling_the_leaf_keeps_the_reader_on_the_leaf_and_shows_a_chip(alice, htmx_client):
    session, _, answer = _chat(alice)
    r = htmx_client.post(
        f"/sessions/{session.public_id}/label/", {"entry": answer, "label": "keep", "leaf": answer, "target": answer}
    )
    session.refresh_from_db()
    label = Entry.objects.get(session=session, type="label")
    assert session.leaf_id == label.entry_id  # the stored leaf moves onto the label, as in pi
    url = json.loads(r.headers["HX-Location"])["path"]
    html = htmx_client.get(url, headers={"HX-Target": "explorer"}).content.decode()
    assert "data-following" in html and "off-leaf-note" not in html
    assert "Label keep on" not in html and f'id="e-{label.entry_id}"' not in html
    article = html[html.index(f'id="e-{answer}"') :].split("</article>")[0]
    assert '<span class="badge" title="label">keep</span>' in article
    assert 'class="pill" title="The session\'s current leaf">leaf</span>' in article


def test_the_page_reads_a_bookkeeping_leaf_as_its_nearest_real_entry(alice, alice_client):
    session, _, answer = _chat(alice)
    label = services.label_set(session=session, target_id=answer, label="one", author=alice)
    services.label_set(session=session, target_id=answer, label="two", author=alice)  # the last label wins
    services.session_rename(session=session, name="Renamed chat", author=alice)
    session.refresh_from_db()
    assert Entry.objects.get(session=session, entry_id=session.leaf_id).type == "session_info"
    for params in ({}, {"leaf": session.leaf_id}, {"leaf": label.entry_id, "target": label.entry_id}):
        html = _page(alice_client, session, **params)
        assert f'data-leaf="{answer}"' in html, params
        assert "data-following" in html and "off-leaf-note" not in html, params
    assert '<span class="badge" title="label">two</span>' in html and ">one<" not in html
    # In the tree, the default filter shows the real leaf as the leaf, not a label row.
    assert re.search(rf'class="node [^"]*current" id="t-{answer}"', html)
    assert 'class="node k-label' not in html


def test_an_empty_label_clears_the_chip(alice, alice_client):
    session, _, answer = _chat(alice)
    services.label_set(session=session, target_id=answer, label="gone", author=alice)
    services.label_set(session=session, target_id=answer, label="", author=alice)
    html = _page(alice_client, session)
    assert "gone" not in html and "(cleared)" not in html


def test_a_rename_is_a_small_note_not_a_card(alice, alice_client):
    session, _, _ = _chat(alice)
    services.session_rename(session=session, name="  New name  ", author=alice)
    services.entry_append(session=session, payload=user("more", 1_767_600_002_000), author=alice)
    html = _page(alice_client, session)
    assert "Renamed: " not in html
    note = (
        r'class="msg m-rename"[^>]*>\s*<p class="rename-note">.*Renamed to “New name” '
        r'<a class="act small"[^>]*>Context</a></p>'
    )
    assert re.search(note, html)
    rename = html.split('class="msg m-rename"')[1].split("</article>")[0]
    assert 'class="msg m-marker"' not in rename
    assert "threads" not in rename  # no comment opener under the note: it stays a note, not a card
    assert "threads" in html.split('class="msg m-user"')[1].split("</article>")[0]  # the owner may comment


def test_the_sibling_switcher_looks_through_a_label_that_starts_a_branch(alice, alice_client):
    """The demo "Fix flaky session-list test": a label on the diagnosis, then the first branch grows
    from that label, the second from the diagnosis itself (a branch summary)."""
    session = demo.demo_sessions_create(owner=alice)[0]
    first = Entry.objects.get(session=session, type="message", preview__contains="option 2")
    assert Entry.objects.get(session=session, entry_id=first.parent_id).type == "label"
    summary = Entry.objects.get(session=session, type="branch_summary")
    html = _page(alice_client, session, target=first.entry_id)
    article = html[html.index(f'id="e-{first.entry_id}"') :].split("</article>")[0]
    assert '<span class="sib-pos">1/2</span>' in article
    assert f"target={summary.entry_id}" in article  # "next" goes to the other branch
    html = _page(alice_client, session)
    article = html[html.index(f'id="e-{summary.entry_id}"') :].split("</article>")[0]
    assert '<span class="sib-pos">2/2</span>' in article
    assert f"target={first.entry_id}" in article


def test_bob_still_gets_404(bob_client, alice):
    session, _, _ = _chat(alice)
    assert bob_client.get(f"/sessions/{session.public_id}/").status_code == 404


def test_a_rename_at_the_leaf_ends_the_conversation_while_the_leaf_reads_as_the_last_message(alice, alice_client):
    session, _, answer = _chat(alice)
    services.label_set(session=session, target_id=answer, label="x", author=alice)
    services.session_rename(session=session, name="Renamed last", author=alice)
    html = _page(alice_client, session)
    assert f'data-leaf="{answer}"' in html and "data-following" in html
    conversation = html[html.index('id="conversation"') :]
    assert conversation.index(f'id="e-{answer}"') < conversation.index("Renamed to “Renamed last”")
