"""A search has a time budget (PIWEB_SEARCH_TIMEOUT_MS, store/search.py): a query that would keep
the database busy longer (many one-letter prefixes, each the merged list of every term it begins)
is stopped and asked to narrow, on the API, the search page and the session list alike; and a
term given twice is asked once."""

from __future__ import annotations

import string
import time

import pytest
from django.db import connection

from sessions_app.core import searchtext
from sessions_app.errors import SearchTooBroad
from sessions_app.models import AuditRecord
from sessions_app.store import search
from sessions_app.store.importing import pipeline
from tests.builders import chain, header, jsonl

pytestmark = pytest.mark.django_db

HOSTILE = " ".join(f"{c}*" for c in string.ascii_lowercase + string.digits)
BROAD = "e* t* o*"  # every document: the entry ids' 4,000 terms begin with e


def test_a_term_given_twice_is_asked_once():
    query = searchtext.parse('s* s* Foo foo "a b" "A B" a* sr*')
    assert query.words == ["foo"] and query.prefixes == ["s", "a", "sr"] and query.phrases == [["a", "b"]]
    assert query.fts5() == '"foo" "s"* "a"* "sr"* "a b"'


@pytest.fixture
def many(alice):
    """4,000 entries whose ids (e0000001...) are 4,000 terms under one prefix."""
    return pipeline.session_import(owner=alice, data=jsonl(header("many"), *chain(4000))).session


def test_a_search_past_its_budget_stops_and_says_what_to_do(alice, alice_client, many, settings):
    assert len(search.search(user=alice, q="e0000007").hits) == 1
    settings.PIWEB_SEARCH_TIMEOUT_MS = 1
    with pytest.raises(SearchTooBroad, match=r"took longer than 0\.001 s and was stopped: add a word or a filter"):
        search.search(user=alice, q=BROAD)
    response = alice_client.get("/api/search", {"q": BROAD})
    assert response.status_code == 422
    assert response.json()["extra"]["field"] == "q" and "narrow it" in response.json()["message"]
    page = alice_client.get("/search/", {"q": BROAD})
    assert page.status_code == 422 and "narrow it" in page.content.decode()
    # Both are in the audit trail, as stopped: who asks what costs the database most.
    stopped = AuditRecord.objects.filter(action="search", actor_username="alice").order_by("seq")
    assert [r.extra for r in stopped] == [
        {"q": BROAD, "stopped": True, "via": "api"},
        {"q": BROAD, "stopped": True, "via": "page"},
    ]
    # The session list says it above its empty table: in the table swapped in as you type, and on
    # the whole page (search box included) when the address is loaded.
    swapped = alice_client.get("/", {"q": BROAD}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="session-table")
    assert swapped.status_code == 200 and 'role="alert">This search took longer' in swapped.content.decode()
    assert many.public_id not in swapped.content.decode()
    listed = alice_client.get("/", {"q": BROAD})
    assert listed.status_code == 422
    assert 'role="alert">This search took longer' in listed.content.decode()
    assert 'name="q" value="e* t* o*"' in listed.content.decode()

    # The budget ends with the search: the connection runs as long as it needs after it.
    settings.PIWEB_SEARCH_TIMEOUT_MS = 0
    assert search.search(user=alice, q=HOSTILE).hits == [] and len(search.search(user=alice, q=BROAD).hits) == 20


def test_the_budget_leaves_the_connection_as_it_found_it(alice, many, settings):
    settings.PIWEB_SEARCH_TIMEOUT_MS = 60_000
    assert len(search.search(user=alice, q="e0000007 text").hits) == 1
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"  # the caller's transaction goes on without the budget
        else:
            # No progress handler left behind: a long statement after the search runs to its end.
            settings.PIWEB_SEARCH_TIMEOUT_MS = 1
            with pytest.raises(SearchTooBroad):
                search.search(user=alice, q=BROAD)
            cursor.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s) SELECT count(*) FROM n",
                [300_000],
            )
            assert cursor.fetchone()[0] == 300_000


def test_the_budget_holds_for_the_whole_search_not_each_statement(settings):
    """Three statements that each fit in the budget, but not together, are stopped (on PostgreSQL
    each statement gets what is left of it as its timeout)."""
    busy = (
        "SELECT count(*) FROM generate_series(1, %s)"
        if connection.vendor == "postgresql"
        else "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s) SELECT count(*) FROM n"
    )
    size = 200_000
    with connection.cursor() as cursor:
        while True:  # a statement of about 0.1 s or more on this machine
            start = time.monotonic()
            cursor.execute(busy, [size])
            took = time.monotonic() - start
            if took >= 0.1:
                break
            size *= 2
        settings.PIWEB_SEARCH_TIMEOUT_MS = round(took * 1000 * 1.6)
        with pytest.raises(SearchTooBroad), search.time_budget():
            for _ in range(3):
                cursor.execute(busy, [size])
