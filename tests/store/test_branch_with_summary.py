"""branch_with_summary: pi's branchWithSummary(fromId | null, summary, details?, fromHook?)."""

from __future__ import annotations

import json

import pytest

from sessions_app.errors import EntryNotFound
from sessions_app.models import Session
from sessions_app.store import selectors, services
from tests.builders import assistant, user
from tests.store.helpers import assert_tree, counts, keys

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice)
    for i in range(4):
        services.entry_append(session=session, payload=user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    return session


def test_it_hangs_the_summary_off_the_target_with_fromid_equal_to_it(session, alice):
    target = assert_tree(session)[1].entry_id
    entry = services.branch_with_summary(session=session, entry_id=target, summary="explored X", author=alice)
    data = json.loads(entry.raw)
    assert keys(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary"]
    assert data["parentId"] == target
    assert data["fromId"] == target
    assert data["summary"] == "explored X"
    assert entry.author == alice
    assert session.leaf_id == entry.entry_id
    assert Session.objects.get(pk=session.pk).leaf_id == entry.entry_id
    assert_tree(session, expected=5)


def test_at_the_root_fromid_is_the_string_root(session):
    entry = services.branch_with_summary(session=session, entry_id=None, summary="from scratch")
    data = json.loads(entry.raw)
    assert data["parentId"] is None
    assert data["fromId"] == "root"
    assert entry.depth == 0
    assert session.leaf_id == entry.entry_id
    context = selectors.session_context(session=session)
    assert context["messages"] == [
        {"role": "branchSummary", "summary": "from scratch", "fromId": "root", "timestamp": entry.ts_ms}
    ]


def test_details_and_fromhook_are_stored_in_pi_order(session):
    target = session.leaf_id
    entry = services.branch_with_summary(
        session=session,
        entry_id=target,
        summary="s",
        details={"readFiles": ["a.py"], "modifiedFiles": []},
        from_hook=False,
    )
    assert keys(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"]
    data = json.loads(entry.raw)
    assert data["details"] == {"readFiles": ["a.py"], "modifiedFiles": []}
    assert data["fromHook"] is False


def test_the_summary_joins_the_context_after_the_target(session):
    stored = assert_tree(session)
    services.branch_with_summary(session=session, entry_id=stored[1].entry_id, summary="tried Y")
    messages = selectors.session_context(session=session)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "branchSummary"]
    assert messages[-1]["fromId"] == stored[1].entry_id
    assert messages[-1]["summary"] == "tried Y"


def test_an_empty_summary_is_stored_but_adds_no_message(session):
    target = assert_tree(session)[0].entry_id
    entry = services.branch_with_summary(session=session, entry_id=target, summary="")
    assert json.loads(entry.raw)["summary"] == ""
    assert [m["role"] for m in selectors.session_context(session=session)["messages"]] == ["user"]


def test_an_unknown_target_changes_nothing(session):
    before, leaf = counts(), session.leaf_id
    with pytest.raises(EntryNotFound, match="Entry ghost not found"):
        services.branch_with_summary(session=session, entry_id="ghost", summary="s")
    assert counts() == before
    assert Session.objects.get(pk=session.pk).leaf_id == leaf
