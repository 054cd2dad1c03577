"""The session list: search, label filter, sort, pagination, fragments; import with errors."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.models import Session
from sessions_app.store import services
from tests.xss import session_file

pytestmark = pytest.mark.django_db


def test_it_lists_only_my_sessions_with_their_labels(alice_client, bob, tree):
    services.session_create(owner=bob, name="Bob's secret")
    r = alice_client.get("/")
    html = r.content.decode()
    assert "<html" in html and "Branchy session" in html and "Bob&#x27;s secret" not in html
    assert ">question</a>" in html


def test_search_label_filter_sort_and_fragment(htmx_client, alice, tree):
    services.session_create(owner=alice, name="Another one")
    html = htmx_client.get("/?q=rust", headers={"HX-Target": "session-table"}).content.decode()
    assert "<html" not in html and 'id="session-table"' in html
    assert "Branchy session" in html and "Another one" not in html  # message text is searched
    html = htmx_client.get("/?label=question", headers={"HX-Target": "session-table"}).content.decode()
    assert "Branchy session" in html and "Another one" not in html
    html = htmx_client.get("/?sort=name", headers={"HX-Target": "session-table"}).content.decode()
    assert html.index("Another one") < html.index("Branchy session")


def test_pagination(alice_client, alice):
    for k in range(30):
        services.session_create(owner=alice, name=f"s{k:02d}")
    html = alice_client.get("/").content.decode()
    assert "Page 1 of 2" in html
    assert "Page 2 of 2" in alice_client.get("/?page=2").content.decode()


def test_the_list_has_a_bounded_number_of_queries(alice_client, alice, django_assert_max_num_queries):
    for k in range(30):
        s = services.session_create(owner=alice, name=f"s{k:02d}")
        services.label_set(session=s, target_id=s.leaf_id or "", label=f"l{k}")
    with django_assert_max_num_queries(10):
        alice_client.get("/")


def test_import_several_files(htmx_client, alice):
    good = SimpleUploadedFile("a.jsonl", session_file("11111111-1111-4111-8111-111111111111", [
        {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}]))  # fmt: skip
    other = SimpleUploadedFile("b.jsonl", session_file("22222222-2222-4222-8222-222222222222", []))
    r = htmx_client.post("/import/", {"files": [good, other]})
    html = r.content.decode()
    assert r.status_code == 200 and "<html" not in html
    assert html.count("import-result ok") == 2
    assert Session.objects.filter(owner=alice).count() == 2


def test_a_rejected_file_shows_its_line_numbers(htmx_client, alice):
    data = session_file("33333333-3333-4333-8333-333333333333", [{"type": "message", "message": {"role": "user"}}])
    data += b"not json\n"
    r = htmx_client.post("/import/", {"files": [SimpleUploadedFile("bad <b>.jsonl", data)]})
    html = r.content.decode()
    assert r.status_code == 400
    assert "was rejected" in html and "line 3" in html
    assert "bad &lt;b&gt;.jsonl" in html
    assert not Session.objects.filter(owner=alice).exists()


def test_import_without_javascript_renders_a_page(alice_client):
    data = session_file("44444444-4444-4444-8444-444444444444", [])
    r = alice_client.post("/import/", {"files": [SimpleUploadedFile("c.jsonl", data)]})
    assert r.status_code == 200 and "<html" in r.content.decode()


def test_a_label_longer_than_its_row_preview_filters_the_list(alice_client, alice):
    """Labels are read from the label entries: a row preview is cut at 200 characters."""
    long = "release " + "x" * 242
    tagged = services.session_create(owner=alice, name="Tagged-session")
    services.label_set(session=tagged, target_id=tagged.leaf_id or "", label=long, author=alice)
    services.session_create(owner=alice, name="Untagged-session")
    html = alice_client.get("/").content.decode()
    assert f'<option value="{long}" >{long}</option>' in html
    html = alice_client.get("/", {"label": long}).content.decode()
    assert "Tagged-session" in html and "Untagged-session" not in html
    html = alice_client.get("/", {"label": long[:200]}).content.decode()
    assert "Tagged-session" not in html


def test_a_cleared_label_leaves_the_filter_and_no_longer_matches(alice_client, alice):
    """A later label entry with an empty label clears it (pi's label replay)."""
    s = services.session_create(owner=alice, name="Once-tagged")
    target = s.leaf_id or ""
    services.label_set(session=s, target_id=target, label="stale", author=alice)
    services.label_set(session=s, target_id=target, label="", author=alice)
    kept = services.session_create(owner=alice, name="Still-tagged")
    services.label_set(session=kept, target_id=kept.leaf_id or "", label="kept", author=alice)
    html = alice_client.get("/").content.decode()
    assert '<option value="stale"' not in html and '<option value="kept"' in html
    html = alice_client.get("/", {"label": "stale"}).content.decode()
    assert "Once-tagged" not in html and "No session matches." in html


def test_sort_by_name_uses_the_name_the_list_shows(htmx_client, alice):
    """A session without a session_info name is listed (and sorted) by its first message."""
    services.session_create(owner=alice, name="Middle name")
    unnamed = services.session_create(owner=alice)
    services.entry_append(session=unnamed, payload={"type": "message", "message": {
        "role": "user", "content": "zebra question", "timestamp": 1}})  # fmt: skip
    first = services.session_create(owner=alice)
    services.entry_append(session=first, payload={"type": "message", "message": {
        "role": "user", "content": "aardvark question", "timestamp": 1}})  # fmt: skip
    html = htmx_client.get("/?sort=name", headers={"HX-Target": "session-table"}).content.decode()
    assert html.index("aardvark question") < html.index("Middle name") < html.index("zebra question")
