"""Prefix queries (migrat*) of every length, alone and with label:, and SQLite's FTS5 prefix index
(migration 0020, search_index.FTS_PREFIXES): its forward and backward steps and its upkeep."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app.store import search, search_index, services
from tests.builders import assistant, user

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("sessions_app.migrations.0020_search_prefix_index")
BEFORE = ("sessions_app", "0019_message_span")
PREFIX_OPTION = "prefix='" + " ".join(str(n) for n in search_index.FTS_PREFIXES) + "'"


def _found(owner: Any, q: str) -> set[str]:
    return {h.entry_id for h in search.search(user=owner, q=q, limit=100).hits}


@pytest.fixture
def planted(alice):
    """alice's session: three words that share their first letters, each in one entry, among
    entries whose words start with other letters (no other word of the session starts with q)."""
    s = services.session_create(owner=alice, name="cache work", cwd="/w")
    texts = {
        "vorak": "find qxvorak in the logs",
        "vent": "then qxvent was printed",
        "will": "and qxwill stayed",
        "other": "nothing else matches here",
        "near": "ax xq qu x",  # near misses: a q inside a word, a word q alone is no prefix of qx
    }
    ids = {}
    for n, (name, text) in enumerate(texts.items()):
        payload = user(text, 1_767_600_000_000 + n) if n % 2 == 0 else assistant(text, 1_767_600_000_000 + n)
        ids[name] = str(services.entry_append(session=s, payload=payload, author=alice).entry_id)
    s.refresh_from_db()
    return s, ids


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("qx*", {"vorak", "vent", "will"}),  # 2 letters: a prefix FTS5 indexes
        ("qxv*", {"vorak", "vent"}),  # 3 letters: indexed
        ("qxvo*", {"vorak"}),  # 4 letters: not indexed, the terms' lists merged
        ("qxvorak*", {"vorak"}),  # a whole word as its own prefix
        ("qxvoraks*", set()),
        ("qxz*", set()),
        ("qu*", {"near"}),
        ("QXV*", {"vorak", "vent"}),  # a prefix's case does not matter
    ],
)
def test_prefixes_of_two_three_and_more_letters_find_their_words_only(alice, planted, q, expected):
    _, ids = planted
    assert _found(alice, q) == {ids[name] for name in expected}


def test_a_one_letter_prefix_finds_every_word_it_begins(alice, planted):
    _, ids = planted
    assert _found(alice, "q*") == {ids[name] for name in ("vorak", "vent", "will", "near")}
    assert _found(alice, "q* role:user") == {ids[name] for name in ("vorak", "will", "near")}


@pytest.mark.parametrize("q", ["q*", "qx*", "qxv*", "qxvo*", "qxvorak*"])
def test_a_prefix_with_label_finds_only_the_labelled_entries(alice, planted, q):
    s, ids = planted
    services.label_set(session=s, target_id=ids["vorak"], label="postmortem", author=alice)
    services.label_set(session=s, target_id=ids["will"], label="incident", author=alice)
    assert _found(alice, f"{q} label:postmortem") == {ids["vorak"]}
    assert _found(alice, f"{q} label:nothing") == set()
    assert _found(alice, f"qxvent {q} label:postmortem") == set()  # the words and the prefix together


def test_a_prefix_with_label_in_a_phrase_and_a_session(alice, planted):
    s, ids = planted
    services.label_set(session=s, target_id=ids["vent"], label="postmortem", author=alice)
    assert _found(alice, f'"then qxvent" qx* label:postmortem session:{s.public_id}') == {ids["vent"]}
    assert _found(alice, '"then qxvent" qxw* label:postmortem') == set()


@pytest.mark.parametrize("q", ["kes*", "k*", "kest*", "kes* label:keep", "k* label:keep", "kestrel label:keep"])
def test_ranked_prefix_hits_put_the_most_relevant_first_with_or_without_label(alice, q):
    s = services.session_create(owner=alice, name="rank")
    ids = [
        str(services.entry_append(session=s, payload=user(text, 1_767_600_000_000 + n), author=alice).entry_id)
        for n, text in enumerate(["kestrel kestrel kestrel", "kestrel " + " ".join(f"filler{i}" for i in range(200))])
    ]
    for target in ids:
        services.label_set(session=s, target_id=target, label="keep", author=alice)
    result = search.search(user=alice, q=q, limit=5)
    assert result.ranked is True
    assert result.hits[0].entry_id == ids[0]  # though the other is newer


def test_an_appended_entry_is_found_by_its_prefixes_and_the_index_checks_out(alice, planted):
    s, ids = planted
    new = str(services.entry_append(session=s, payload=user("qxnovel arrives late"), author=alice).entry_id)
    assert _found(alice, "qxn*") == {new}
    assert _found(alice, "qxno*") == {new}
    assert _found(alice, "qx*") == {ids["vorak"], ids["vent"], ids["will"], new}
    if connection.vendor == "sqlite":
        with connection.cursor() as c:  # raises if an index, a prefix index among them, disagrees with the text
            c.execute(f"INSERT INTO {search_index.FTS}({search_index.FTS}, rank) VALUES ('integrity-check', 1)")


def test_the_migration_indexes_the_prefixes_the_code_names():
    assert MIGRATION.PREFIXES == search_index.FTS_PREFIXES


def _definition() -> str:
    with connection.cursor() as c:
        c.execute("SELECT sql FROM sqlite_master WHERE name = %s", [search_index.FTS])
        return str(c.fetchone()[0])


def _triggers() -> list[tuple[str, str]]:
    with connection.cursor() as c:
        c.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        return [(str(name), str(sql)) for name, sql in c.fetchall()]


def _automerge() -> int:
    with connection.cursor() as c:
        c.execute(f"SELECT v FROM {search_index.FTS}_config WHERE k = 'automerge'")
        return int(c.fetchone()[0])


def _migrate(target: tuple[str, str] | None) -> None:
    """To target; None: back to the app's latest migration (later ones were undone with 0020)."""
    executor = MigrationExecutor(connection)
    executor.migrate([target or executor.loader.graph.leaf_nodes("sessions_app")[0]])


@pytest.mark.django_db(transaction=True)  # SQLite alters its schema outside a transaction
def test_the_migration_forward_and_back_keeps_every_document_searchable(alice, planted):
    s, ids = planted
    services.label_set(session=s, target_id=ids["vorak"], label="postmortem", author=alice)
    expected = {q: _found(alice, q) for q in ("q*", "qx*", "qxv*", "qxvo*", "qxv* label:postmortem", "logs")}
    sqlite = connection.vendor == "sqlite"
    if sqlite:
        triggers = _triggers()
        assert PREFIX_OPTION in _definition()
    try:
        _migrate(BEFORE)
        if sqlite:
            assert "prefix" not in _definition()
            assert _automerge() == 16
            assert _triggers() == triggers
        assert {q: _found(alice, q) for q in expected} == expected
    finally:
        _migrate(None)
    if sqlite:
        assert PREFIX_OPTION in _definition()
        assert _automerge() == 16
        assert _triggers() == triggers
    assert {q: _found(alice, q) for q in expected} == expected
    assert expected["qxv* label:postmortem"] == {ids["vorak"]}
