"""session_delete: the only way entries disappear: the whole session at once."""

from __future__ import annotations

import pytest

from sessions_app.errors import SessionNotFound
from sessions_app.models import Entry, MessageSpan, Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import assistant, user
from tests.store.helpers import export_bytes, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice):
    session = services.session_create(owner=alice, name="doomed")
    services.entry_append(session=session, payload=user("q"))
    services.entry_append(session=session, payload=assistant("a"))
    assert session.leaf_id is not None
    services.label_set(session=session, target_id=session.leaf_id, label="x")
    return session


def test_it_removes_the_session_and_its_entries(session, alice):
    assert MessageSpan.objects.filter(session_id=session.pk).count() == 2  # (the appends' messages)
    services.session_delete(session=session)
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert not MessageSpan.objects.filter(session_id=session.pk).exists()
    assert list(selectors.session_list_for_user(user=alice)) == []
    with pytest.raises(SessionNotFound):
        selectors.session_get_for_user(user=alice, public_id=session.public_id)


def test_other_sessions_are_untouched(session, alice, bob):
    mine = services.session_create(owner=alice)
    services.entry_append(session=mine, payload=user("mine"))
    theirs = services.session_create(owner=bob)
    services.entry_append(session=theirs, payload=user("theirs"))
    before = snapshot(mine), snapshot(theirs)
    services.session_delete(session=session)
    assert (snapshot(mine), snapshot(theirs)) == before


def test_forks_survive_their_source(session, alice):
    fork = services.session_fork(session=session, entry_id=session.leaf_id, owner=alice)
    before = snapshot(fork)
    services.session_delete(session=session)
    fork = Session.objects.get(pk=fork.pk)
    assert fork.parent_session is None
    assert snapshot(fork) == before


def test_deleting_a_fork_leaves_the_source(session, alice):
    fork = services.session_fork(session=session, entry_id=session.leaf_id, owner=alice)
    before = snapshot(session)
    services.session_delete(session=fork)
    assert snapshot(session) == before


def test_a_deleted_session_can_be_imported_again(session, alice):
    exported = export_bytes(session)
    services.session_delete(session=session)
    result = pipeline.session_import(owner=alice, data=exported)
    assert result.created
    assert export_bytes(result.session) == exported
