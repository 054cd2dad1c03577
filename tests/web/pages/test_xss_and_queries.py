"""Hostile session text is escaped everywhere; query counts stay bounded whatever the session size."""

from __future__ import annotations

import pytest

from sessions_app.models import Entry
from sessions_app.store import services
from sessions_app.store.importing import pipeline
from tests.paths import LARGE_SESSION
from tests.worlds import detail
from tests.xss import ALL, assert_no_live_payload, hostile_payloads, session_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def hostile(alice):
    s = services.session_create(owner=alice, name="x", cwd="/tmp/" + ALL)
    ids = [services.entry_append(session=s, payload=p, author=alice).entry_id for p in hostile_payloads()]
    for target in ids[:4]:
        services.label_set(session=s, target_id=target, label=ALL[:400], author=alice)
    services.leaf_move(session=s, entry_id=ids[-1])
    s.refresh_from_db()
    return s, ids


def test_session_text_is_escaped_on_every_page(alice_client, hostile):
    s, ids = hostile
    sid = s.public_id
    urls = [
        "/",
        f"/?q={ALL[:40]}",
        f"/sessions/{sid}/",
        f"/sessions/{sid}/?filter=all",
        f"/sessions/{sid}/?filter=labeled-only",
        f"/sessions/{sid}/?q=user",
        f"/sessions/{sid}/?target={ids[3]}",
        f"/sessions/{sid}/tree/branch/?node={ids[0]}",
        f"/sessions/{sid}/tree/gap/?node={ids[-1]}&up=1",
        f"/sessions/{sid}/conversation/earlier/?before={ids[-1]}",
        f"/sessions/{sid}/entries/{ids[5]}/output/",
        f"/sessions/{sid}/delete/",
    ]
    for url in urls:
        r = alice_client.get(url)
        assert r.status_code == 200, url
        assert_no_live_payload(r.content.decode())


def test_the_html_export_embeds_session_text_as_escaped_json_only(alice_client, hostile):
    s, _ = hostile
    html = b"".join(alice_client.get(f"/sessions/{s.public_id}/export.html").streaming_content).decode()
    assert_no_live_payload(html)


def test_rejected_file_names_and_messages_are_escaped(htmx_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = session_file("55555555-5555-4555-8555-555555555555", []) + (ALL + "\n").encode()
    r = htmx_client.post("/import/", {"files": [SimpleUploadedFile("<script>window.__xss=1</script>.jsonl", data)]})
    assert_no_live_payload(r.content.decode())


# The session page also draws the chat composer (the model and thinking level at the leaf, read
# through selectors.session_context) and, off the leaf path, which entries are on it: a fixed few more.
CHAT_QUERIES = 3 + 3  # + the session.open audit record (lock the chain head, insert, move the head)
NAV_QUERIES = 1  # the top bar: may the user see the Audit link (piweb_nav.may_audit)
TREE_REVIEW_QUERIES = 2  # the tree rows' comment counts and verdict marks (reviews.tree_marks)
REVIEW_QUERIES = TREE_REVIEW_QUERIES + 1  # and the threads under the shown messages


def test_the_session_page_has_bounded_queries_small(alice_client, tree, django_assert_max_num_queries):
    with django_assert_max_num_queries(16 + CHAT_QUERIES + NAV_QUERIES + REVIEW_QUERIES):
        alice_client.get(detail(tree))


@pytest.fixture
def big(alice, generated):
    data = generated(4000, seed=3, branch_prob=0.05, compactions=4, labels=40)
    return pipeline.session_import(owner=alice, data=data).session


def test_the_session_page_has_bounded_queries_large(alice_client, big, django_assert_max_num_queries):
    """A 4000-entry branched session is read lazily: a fixed number of queries, a bounded page."""
    sid = big.public_id
    with django_assert_max_num_queries(16 + CHAT_QUERIES + NAV_QUERIES + REVIEW_QUERIES):
        r = alice_client.get(f"/sessions/{sid}/")
    html = r.content.decode()
    assert len(html) < 500_000
    assert "entries above" in html
    for mode in ("no-tools", "user-only", "labeled-only", "all"):
        with django_assert_max_num_queries(16 + CHAT_QUERIES + NAV_QUERIES + REVIEW_QUERIES):
            assert alice_client.get(f"/sessions/{sid}/?filter={mode}").status_code == 200
    root = Entry.objects.filter(session=big, parent_id=None).values_list("entry_id", flat=True).first()
    with django_assert_max_num_queries(16 + CHAT_QUERIES + NAV_QUERIES + REVIEW_QUERIES):
        assert alice_client.get(f"/sessions/{sid}/?target={root}").status_code == 200
    alts = Entry.objects.filter(session=big, type="message").values_list("parent_id", flat=True)
    counts: dict[str | None, int] = {}
    for p in alts:
        counts[p] = counts.get(p, 0) + 1
    branch_parent = next(p for p, n in counts.items() if n > 1 and p)
    kid = Entry.objects.filter(session=big, parent_id=branch_parent).values_list("entry_id", flat=True).last()
    with django_assert_max_num_queries(8 + TREE_REVIEW_QUERIES):
        assert alice_client.get(f"/sessions/{sid}/tree/branch/?node={kid}&d=1").status_code == 200
    leaf = big.leaf_id
    with django_assert_max_num_queries(10 + TREE_REVIEW_QUERIES):
        html = alice_client.get(f"/sessions/{sid}/tree/gap/?node={leaf}&up=1").content.decode()
    assert 'class="node' in html


def test_the_real_pi_fixture_renders(alice_client, alice, django_assert_max_num_queries):
    data = LARGE_SESSION.read_bytes()
    s = pipeline.session_import(owner=alice, data=data).session
    with django_assert_max_num_queries(16 + CHAT_QUERIES + NAV_QUERIES + REVIEW_QUERIES):
        r = alice_client.get(f"/sessions/{s.public_id}/")
    assert r.status_code == 200 and len(r.content) < 500_000
