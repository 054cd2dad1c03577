"""Search across sessions (issue 18): what is found where, the query syntax, who sees what, and the
index kept up to date by every write path. Real services and imports build the data."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from sessions_app.access import teams
from sessions_app.core import searchtext
from sessions_app.models import AuditRecord, SearchDoc
from sessions_app.store import search, search_index, services, shares
from sessions_app.store.importing import pipeline
from tests.builders import assistant, entry, header, jsonl, tool_call, tool_result, user
from tests.xss import PAYLOADS, assert_no_live_payload

pytestmark = pytest.mark.django_db


def _add(session: Any, payload: dict[str, Any], owner: Any) -> str:
    return str(services.entry_append(session=session, payload=payload, author=owner).entry_id)


def _api(client: Client, q: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/search", {"q": q, **params})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _found(user: Any, q: str) -> set[tuple[str, str]]:
    return {(h.session_id, h.entry_id) for h in search.search(user=user, q=q, limit=100).hits}


@pytest.fixture
def talk(alice):
    """alice's session: a user question, a reply with a bash call, its result, a name."""
    s = services.session_create(owner=alice, name="cache work", cwd="/w")
    ids = {
        "u": _add(s, user("where did we decide to drop the cache layer?", 1_767_600_000_000), alice),
        "a": _add(s, assistant("we drop it", 1_767_600_001_000, call=tool_call("c1", "rm -rf build/tmp_dir")), alice),
        "r": _add(s, tool_result("c1", "removed migration_0042.sql", 1_767_600_002_000), alice),
        "u2": _add(s, user("the migration failed badly", 1_767_600_003_000), alice),
    }
    s.refresh_from_db()
    return s, ids


def test_planted_words_in_a_generated_session_are_found_at_their_entry(alice, generated):
    lines = generated(300, 7).decode().splitlines()
    planted: dict[str, str] = {}
    for i, raw in enumerate(lines[1:], start=1):
        data = json.loads(raw)
        if data["type"] == "message" and data["message"]["role"] == "user" and len(planted) < 3:
            word = f"zqplant{len(planted)}x"
            data["message"]["content"] = [{"type": "text", "text": f"something {word} here"}]
            lines[i] = json.dumps(data)
            planted[word] = data["id"]
    result = pipeline.session_import(owner=alice, data=("\n".join(lines) + "\n").encode())
    assert len(planted) == 3
    for word, entry_id in planted.items():
        assert _found(alice, word) == {(result.session.public_id, entry_id)}


def test_all_words_must_match_within_one_entry(alice, talk):
    s, ids = talk
    assert _found(alice, "drop cache") == {(s.public_id, ids["u"])}
    # "drop" is in u and a, "failed" only in u2: no entry has both
    assert _found(alice, "drop failed") == set()


def test_phrases_and_prefixes(alice, talk):
    s, ids = talk
    assert _found(alice, '"the migration failed"') == {(s.public_id, ids["u2"])}
    assert _found(alice, '"failed the migration"') == set()
    assert _found(alice, "migrat*") == {(s.public_id, ids["r"]), (s.public_id, ids["u2"])}


def test_tool_calls_results_and_names_are_searched(alice, talk):
    s, ids = talk
    assert _found(alice, '"rm -rf"') == {(s.public_id, ids["a"])}
    assert _found(alice, "tool:bash rm") == {(s.public_id, ids["a"])}
    assert _found(alice, "migration_0042") == {(s.public_id, ids["r"])}
    named = search.search(user=alice, q="work", limit=5).hits  # the session's name, set at creation
    assert [(h.session_id, h.role) for h in named] == [(s.public_id, "name")]


def test_filters(alice, talk):
    s, ids = talk
    assert _found(alice, "drop role:assistant") == {(s.public_id, ids["a"])}
    assert _found(alice, "drop role:user") == {(s.public_id, ids["u"])}
    assert _found(alice, "drop role:USER") == {(s.public_id, ids["u"])}  # a role's case does not matter
    assert _found(alice, "removed role:toolresult") == {(s.public_id, ids["r"])}
    assert _found(alice, "rm tool:BASH") == {(s.public_id, ids["a"])}
    assert _found(alice, "rm tool:bas") == set()  # a whole tool name, not a part of one
    assert _found(alice, "drop model:SONNET") == {(s.public_id, ids["a"])}
    assert _found(alice, "drop model:sonnet") == {(s.public_id, ids["a"])}
    assert _found(alice, "drop model:gpt") == set()
    assert _found(alice, f"drop session:{s.public_id}") == {(s.public_id, ids["u"]), (s.public_id, ids["a"])}
    assert _found(alice, "drop session:nope") == set()
    both = {(s.public_id, ids["u"]), (s.public_id, ids["a"])}
    today = datetime.now(UTC).date()  # entries are dated when appended
    tomorrow = today + timedelta(days=1)
    assert _found(alice, f"drop after:{today} before:{tomorrow}") == both
    assert _found(alice, f"drop after:{tomorrow}") == set()
    assert _found(alice, f"drop before:{today}") == set()


def test_a_label_hit_lands_on_its_target_and_the_last_label_wins(alice, talk):
    s, ids = talk
    services.label_set(session=s, target_id=ids["u2"], label="postmortem", author=alice)
    assert _found(alice, "postmortem") == {(s.public_id, ids["u2"])}
    assert _found(alice, "failed label:postmortem") == {(s.public_id, ids["u2"])}
    services.label_set(session=s, target_id=ids["u2"], label="incident", author=alice)
    assert _found(alice, "postmortem") == set()
    assert _found(alice, "incident") == {(s.public_id, ids["u2"])}
    assert _found(alice, "failed label:postmortem") == set()  # the label in force filters
    assert _found(alice, "failed label:INCIDENT") == {(s.public_id, ids["u2"])}
    assert _found(alice, "label:incident") == {(s.public_id, ids["u2"])}  # (no words: the filter alone)
    services.label_set(session=s, target_id=ids["u2"], label="bug-828", author=alice)  # words and punctuation
    assert _found(alice, "failed label:bug-828") == {(s.public_id, ids["u2"])}
    assert _found(alice, "label:BUG-828") == {(s.public_id, ids["u2"])}
    assert _found(alice, "failed label:bug-82") == set()
    services.label_set(session=s, target_id=ids["u2"], label="✓✓", author=alice)  # no word characters
    assert _found(alice, "failed label:✓✓") == {(s.public_id, ids["u2"])}
    assert _found(alice, "failed label:✓") == set()
    services.label_set(session=s, target_id=ids["u2"], label=None, author=alice)
    assert _found(alice, "incident") == set()


def test_other_users_and_other_teams_never_appear(django_user_model, alice, bob, talk):
    s, ids = talk
    _add(services.session_create(owner=bob, name="bob's"), user("drop cache bob", 1_767_600_000_000), bob)
    assert {sid for sid, _ in _found(bob, "drop")} != {s.public_id}
    assert s.public_id not in {sid for sid, _ in _found(bob, "drop cache")}
    outsider = django_user_model.objects.create_user("outsider", password="x")
    assert _found(outsider, "drop") == set()
    core = teams.team_create(name="Core", creator=alice)
    teams.session_move_to_team(session=s, team=core, actor=alice)
    assert _found(bob, "migration") == set()  # not a member
    teams.member_invite(team=core, username="bob", role="viewer", actor=alice)
    assert (s.public_id, ids["u2"]) in _found(bob, "migration")
    assert _found(bob, "migration team:core") == _found(bob, "migration")
    assert _found(bob, "migration team:other") == set()


def test_share_links_never_reach_search(alice, talk):
    s, ids = talk
    _, token = shares.share_create(session=s, entry_id=ids["u2"], user=alice)
    anonymous = Client()
    anonymous.get(f"/s/{token}/")
    assert anonymous.get("/api/search", {"q": "migration"}).status_code == 401


def test_api_contract_paging_and_audit(alice, alice_client):
    s = services.session_create(owner=alice, name="many")
    made = [_add(s, user(f"needle number {i}", 1_767_600_000_000 + i * 1000), alice) for i in range(7)]
    body = _api(alice_client, "needle", limit=3)
    assert set(body) == {"hits", "next", "ranked"}
    assert body["ranked"] is True
    assert set(body["hits"][0]) == {"sessionId", "entryId", "snippet", "role", "timestamp", "sessionName"}
    seen = [h["entryId"] for h in body["hits"]]
    while body["next"]:
        body = _api(alice_client, "needle", limit=3, cursor=body["next"])
        seen += [h["entryId"] for h in body["hits"]]
    assert sorted(seen) == sorted(made)
    assert body["hits"][0]["role"] == "user"
    assert AuditRecord.objects.filter(action="search").count() >= 3


def test_recency_order_when_too_many_to_rank(alice, monkeypatch):
    monkeypatch.setattr(search, "RANK_WINDOW", 4)
    s = services.session_create(owner=alice, name="many")
    made = [_add(s, user(f"common word {i}", 1_767_600_000_000 + i * 1000), alice) for i in range(9)]
    first = search.search(user=alice, q="common", limit=5)
    assert first.ranked is False
    assert [h.entry_id for h in first.hits] == made[::-1][:5]
    rest = search.search(user=alice, q="common", limit=5, cursor=first.next)
    assert [h.entry_id for h in rest.hits] == made[::-1][5:]
    assert rest.next is None
    # A later session's matches come first; narrowed to the older session (on PostgreSQL read
    # through its own (session, seq) index) the pages are the same as before.
    later = services.session_create(owner=alice, name="later")
    newer = [_add(later, user(f"common again {i}", 1_767_700_000_000 + i), alice) for i in range(6)]
    assert [h.entry_id for h in search.search(user=alice, q="common", limit=5).hits] == newer[::-1][:5]
    q = f"common session:{s.public_id}"
    first = search.search(user=alice, q=q, limit=5)
    rest = search.search(user=alice, q=q, limit=5, cursor=first.next)
    assert [h.entry_id for h in [*first.hits, *rest.hits]] == made[::-1]
    assert first.ranked is False and rest.next is None


@pytest.mark.parametrize("q", ['"', "NEAR(", "*", "a OR", '"unclosed', "AND NOT", "^x", "col:x", "\x00", "(((", "-"])
def test_hostile_queries_get_a_clean_answer(alice_client, talk, q):
    response = alice_client.get("/api/search", {"q": q})
    assert response.status_code == 200, response.content
    assert isinstance(response.json()["hits"], list)


@pytest.mark.parametrize("params", [{"q": "x", "cursor": "!!"}, {"q": "after:yesterday"}, {"q": "x", "cursor": "e30"}])
def test_bad_cursor_or_filter_is_a_422_saying_what(alice_client, params):
    response = alice_client.get("/api/search", params)
    assert response.status_code == 422
    assert response.json()["extra"]["field"] in ("q", "cursor")


def test_snippets_escape_everything_but_mark(alice, alice_client):
    s = services.session_create(owner=alice, name="x")
    _add(s, user("xssword " + " ".join(PAYLOADS), 1_767_600_000_000), alice)
    hits = _api(alice_client, "xssword")["hits"]
    assert hits
    for hit in hits:
        assert "<mark>xssword</mark>" in hit["snippet"]
        assert_no_live_payload(hit["snippet"].replace("<mark>", "").replace("</mark>", ""))
        assert "<" not in hit["snippet"].replace("<mark>", "").replace("</mark>", "")


def test_upkeep_after_import_reimport_and_delete(alice):
    first = [header(), entry("e1", None, message=user("alpha import words")["message"])]
    result = pipeline.session_import(owner=alice, data=jsonl(*first))
    sid = result.session.public_id
    assert _found(alice, "alpha") == {(sid, "e1")}
    more = [*first, entry("e2", "e1", message=user("bravo synced later")["message"])]
    pipeline.session_import(owner=alice, data=jsonl(*more))  # a re-import (as a sync) adds e2 only
    assert _found(alice, "bravo") == {(sid, "e2")}
    assert SearchDoc.objects.filter(session=result.session).count() == 2
    services.session_delete(session=result.session)
    assert _found(alice, "alpha") == set()
    assert not SearchDoc.objects.filter(session_id=result.session.pk).exists()


def test_upkeep_after_append_fork_and_reindex(alice, talk):
    s, _ = talk
    new = _add(s, assistant("charlie appended", 1_767_600_009_000), alice)
    assert _found(alice, "charlie") == {(s.public_id, new)}
    fork = services.session_fork(session=s, entry_id=new, owner=alice)
    assert (fork.public_id, new) in _found(alice, "charlie")
    before = _found(alice, "drop")
    SearchDoc.objects.all().delete()
    search_index.reindex_all()
    assert _found(alice, "drop") == before


def test_thinking_is_searched_only_when_asked(alice):
    s = services.session_create(owner=alice, name="t")
    payload = assistant("visible", 1_767_600_000_000)
    payload["message"]["content"].insert(0, {"type": "thinking", "thinking": "secretthought"})
    a = _add(s, payload, alice)
    assert _found(alice, "secretthought") == set()
    assert _found(alice, "secretthought thinking:yes") == {(s.public_id, a)}


def test_reindex_search_command_rebuilds_the_index(alice, talk):
    from io import StringIO

    from django.core.management import call_command

    s, ids = talk
    SearchDoc.objects.filter(session=s).delete()
    assert _found(alice, "migration") == set()
    out = StringIO()
    call_command("reindex_search", stdout=out)
    assert "reindexed 1 session(s)" in out.getvalue()
    assert _found(alice, "migration") == {(s.public_id, ids["r"]), (s.public_id, ids["u2"])}


def test_search_page_groups_hits_and_links_to_the_node(alice, alice_client, talk):
    s, ids = talk
    html = alice_client.get("/search/", {"q": "migration"}).content.decode()
    assert f"/sessions/{s.public_id}/?leaf={ids['u2']}&amp;target={ids['u2']}" in html
    assert html.count('class="search-group"') == 1 and html.count("data-search-hit") == 2
    assert "<mark>migration</mark>" in html
    assert "data-header-search" in html  # the header box, Ctrl+K in app.js
    bad = alice_client.get("/search/", {"q": "after:nope"})
    assert bad.status_code == 422 and "YYYY-MM-DD" in bad.content.decode()


def test_search_page_escapes_session_names_and_snippets(alice, alice_client):
    s = services.session_create(owner=alice, name="xssname " + " ".join(PAYLOADS))
    _add(s, user("xssword " + " ".join(PAYLOADS), 1_767_600_000_000), alice)
    for q in ("xssword", "xssname"):
        html = alice_client.get("/search/", {"q": q}).content.decode()
        assert "data-search-hit" in html
        assert_no_live_payload(html)


def test_the_search_page_needs_a_sign_in(client):
    assert client.get("/search/", {"q": "x"}).status_code == 302


def test_ranked_hits_put_the_most_relevant_first(alice):
    s = services.session_create(owner=alice, name="rank")
    best = _add(s, user("kestrel kestrel kestrel", 1_767_600_000_000), alice)
    _add(s, user("kestrel " + " ".join(f"filler{i}" for i in range(200)), 1_767_600_001_000), alice)
    result = search.search(user=alice, q="kestrel", limit=5)
    assert result.ranked is True
    assert result.hits[0].entry_id == best  # though the other is newer


def _scoped(scope: str, session: Any) -> str:
    """The phrase query of the probe tests: with role:user among two sessions, or within one."""
    return '"pod bay" role:user' if scope == "role" else f'"pod bay" session:{session.public_id}'


@pytest.mark.parametrize("scope", ["role", "session"])
def test_a_phrase_with_a_filter_pages_the_newest_matches_with_or_without_the_probe(alice, monkeypatch, scope):
    """PostgreSQL looks for a phrase with role: among the newest user documents first, and for
    one in one session among the session's newest documents (search._newest_phrase_matches):
    when they hold a full window it answers, else the whole query does; either way the pages
    are the newest matches, in order, each once."""
    from django.db import connection

    monkeypatch.setattr(search, "RANK_WINDOW", 2)
    monkeypatch.setattr(search, "PROBE", 4)
    answered: list[bool] = []
    probe = search._newest_phrase_matches

    def spy(*args: Any) -> Any:
        found = probe(*args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(search, "_newest_phrase_matches", spy)
    another = services.session_create(owner=alice, name="another")  # two sessions: not the one-session path
    s = services.session_create(owner=alice, name="probe")
    made = []
    for i in range(5):  # the other session's documents between this one's: neither role nor session matches them
        made.append(_add(s, user(f"open the pod bay doors {i}", 1_767_600_000_000 + i), alice))
        _add(another, assistant(f"open the pod bay doors, says the assistant {i}", 1_767_600_000_500 + i), alice)
    said = _add(s, assistant("the pod bay, says the assistant", 1_767_600_009_000), alice)
    if scope == "session":  # (role:user leaves it out)
        made.append(said)
    q = _scoped(scope, s)

    def pages() -> list[str]:
        seen: list[str] = []
        cursor = None
        for _ in range(5):
            result = search.search(user=alice, q=q, limit=2, cursor=cursor)
            assert result.ranked is False or not seen
            seen += [h.entry_id for h in result.hits]
            cursor = result.next
            if cursor is None:
                return seen
        raise AssertionError(f"no last page: {seen}")

    assert pages() == made[::-1]
    if connection.vendor == "postgresql":
        assert answered[0] is True  # the newest four documents past the filters held the first window
    answered.clear()
    for i in range(4):  # newer user messages without the phrase: the probe finds too few
        _add(s, user(f"something else {i}", 1_767_600_010_000 + i), alice)
    assert pages() == made[::-1]
    if connection.vendor == "postgresql":
        assert answered[0] is False


@pytest.mark.parametrize("scope", ["role", "session"])
def test_a_phrase_probe_with_a_page_but_not_all_matches_answers_newest_first(alice, monkeypatch, scope):
    """When the probe holds more than a page of matches but neither the whole window nor every
    document past the filters, the answer is newest first (ranked=False: not every match was
    counted) and its pages go on below the probe: the same hits as the whole query, each once."""
    from django.db import connection

    monkeypatch.setattr(search, "RANK_WINDOW", 10)
    monkeypatch.setattr(search, "PROBE", 4)
    another = services.session_create(owner=alice, name="another")  # two sessions: not the one-session path
    s = services.session_create(owner=alice, name="probe")
    made = [_add(s, user(f"open the pod bay doors {i}", 1_767_600_000_000 + i), alice) for i in range(3)]
    _add(s, user("nothing here", 1_767_600_005_000), alice)
    _add(another, user("the pod bay elsewhere", 1_767_600_005_500), alice)
    made += [_add(s, user(f"the pod bay again {i}", 1_767_600_006_000 + i), alice) for i in range(3)]
    if scope == "session":
        _add(another, user("the pod bay elsewhere, newer", 1_767_600_007_000), alice)
    q = _scoped(scope, s)
    first = search.search(user=alice, q=q, limit=2)
    seen = [h.entry_id for h in first.hits]
    cursor = first.next
    while cursor is not None:
        page = search.search(user=alice, q=q, limit=2, cursor=cursor)
        assert page.ranked is first.ranked
        seen += [h.entry_id for h in page.hits]
        cursor = page.next
    if scope == "role":  # (role:user finds the other session's user message too)
        seen = [e for e in seen if e in made]
    if connection.vendor == "postgresql":
        assert first.ranked is False  # three of the four newest user documents: a page, not all
        assert seen == made[::-1]
    else:
        assert first.ranked is True and sorted(seen) == sorted(made)  # six matches: all ranked
    monkeypatch.setattr(search, "PROBE", 100)  # the probe sees every user document: all ranked
    ranked = search.search(user=alice, q=q, limit=10)
    assert ranked.ranked is True and sorted(h.entry_id for h in ranked.hits if h.entry_id in made) == sorted(made)


def test_a_phrase_with_a_rare_word_is_found_through_the_text_index(alice, monkeypatch):
    """A phrase with a word PostgreSQL's statistics count as rare is not probed for among the
    newest documents: its few matches are all found, and ranked."""
    monkeypatch.setattr(search, "RANK_WINDOW", 10)
    monkeypatch.setattr(search, "PROBE", 4)
    monkeypatch.setattr(search, "_rare_word", lambda query: True)
    services.session_create(owner=alice, name="another")
    s = services.session_create(owner=alice, name="probe")
    made = [_add(s, user(f"open the pod bay doors {i}", 1_767_600_000_000 + i), alice) for i in range(3)]
    _add(s, user("nothing here", 1_767_600_005_000), alice)
    made += [_add(s, user(f"the pod bay again {i}", 1_767_600_006_000 + i), alice) for i in range(3)]
    for q in ('"pod bay" role:user', f'"pod bay" session:{s.public_id}'):
        result = search.search(user=alice, q=q, limit=2)
        assert result.ranked is True and result.next is not None, q  # all six counted
        assert search._newest_phrase_matches(alice, searchtext.parse(q), None, None, 11, 2, "d.id DESC") is None


@pytest.mark.parametrize("window", [2, 50])
def test_a_narrow_date_range_read_first_finds_the_same_hits(alice, monkeypatch, window):
    """On PostgreSQL a date range with fewer than RANGE_FIRST documents is read first
    (search._range_first); read either way, the pages are the same, ranked or newest first."""
    from django.db import connection

    monkeypatch.setattr(search, "RANK_WINDOW", window)
    lines: list[Any] = [header()]
    for i in range(12):  # two a day from 2026-01-05 over six days, every third without the word
        word = "kestrel" if i % 3 else "plover"
        stamp = f"2026-01-{5 + i // 2:02d}T10:00:{i:02d}.000Z"
        lines.append(entry(f"e{i}", f"e{i - 1}" if i else None, timestamp=stamp, text=f"{word} {i}" + " far" * (i % 4)))
    pipeline.session_import(owner=alice, data=jsonl(*lines))
    services.session_create(owner=alice, name="another")  # two sessions: not the one-session path
    queries = ["kestrel after:2026-01-06 before:2026-01-08", "after:2026-01-07", "kestrel before:2026-01-06"]

    def pages(q: str) -> list[tuple[bool, list[str]]]:
        out: list[tuple[bool, list[str]]] = []
        cursor = None
        while True:
            result = search.search(user=alice, q=q, limit=2, cursor=cursor)
            out.append((result.ranked, [h.entry_id for h in result.hits]))
            cursor = result.next
            if cursor is None:
                return out

    chose: list[bool] = []
    range_first = search._range_first

    def spy(query: Any) -> Any:
        scan = range_first(query)
        chose.append(scan[0] is not None)
        return scan

    monkeypatch.setattr(search, "_range_first", spy)
    monkeypatch.setattr(search, "RANGE_FIRST", 0)  # never: the walk by id
    walked = [pages(q) for q in queries]
    assert not any(chose)
    chose.clear()
    monkeypatch.setattr(search, "RANGE_FIRST", 1_000)  # always, here (whatever the statistics)
    monkeypatch.setattr(search, "_rare_word", lambda query: False)
    assert [pages(q) for q in queries] == walked
    assert all(chose) == (connection.vendor == "postgresql") and chose
    assert sum(len(ids) for _, ids in walked[0]) == 3  # 2026-01-06 and -07: four entries, three with the word


def test_a_rare_word_in_a_narrow_date_range_is_found_through_the_text_index(alice):
    """A word PostgreSQL's statistics do not list among the text index's most common elements
    keeps the plan by the text index: the range is not read first (search._rare_word)."""
    from django.db import connection

    s = services.session_create(owner=alice, name="stats")
    for i in range(30):
        _add(s, user(f"kestrel {i}", 1_767_600_000_000 + i), alice)
    narrow = "after:2026-01-05 before:2026-01-06"
    if connection.vendor != "postgresql":
        assert search._range_first(searchtext.parse(f"nosuchword {narrow}")) == (None, [])
        return
    with connection.cursor() as c:
        # (statistics outlive the tables' flushes: an earlier test's ANALYZE may have left some)
        c.execute("SELECT 1 FROM pg_stats WHERE tablename = 'sessions_app_searchdoc' AND most_common_elems IS NOT NULL")
        if c.fetchone() is None:
            assert search._rare_word(searchtext.parse("nosuchword")) is False  # no statistics: none is rare
        c.execute("ANALYZE sessions_app_searchdoc")
    assert search._rare_word(searchtext.parse("nosuchword")) is True
    assert search._rare_word(searchtext.parse('"kestrel nosuchword"')) is True
    assert search._rare_word(searchtext.parse("kestrel")) is False
    assert search._range_first(searchtext.parse(f"nosuchword {narrow}")) == (None, [])
    assert search._range_first(searchtext.parse(f"kestrel {narrow}"))[0] is not None
