"""Run starts (store/run_starts.py): the entries whose parent is not the entry before them in file
order, by which the context reads a path as ranges of seqs. Counted here from the file itself; the
context read by runs must equal the context walked entry by entry, and wrong or missing run starts
must never change an answer."""

from __future__ import annotations

import contextlib
import importlib
import random

import orjson
import pytest
from django.db import connection

from sessions_app.models import Entry, RunStart, Session
from sessions_app.store import deadline, run_starts, search_index, selectors, services
from sessions_app.store.importing import pipeline
from tests.builders import entry, header, jsonl, user
from tests.generate import generate

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("sessions_app.migrations.0021_run_start")


def starts_in_file(data: bytes) -> set[int]:
    """Seqs (1-based, in file order) of the entries whose parentId is not the previous entry's id."""
    lines = [orjson.loads(line) for line in data.splitlines()[1:] if line.strip()]
    found, before = set(), None
    for seq, obj in enumerate(lines, 1):
        if obj["parentId"] is None or obj["parentId"] != before:
            found.add(seq)
        before = obj["id"]
    return found


def recorded(session: Session) -> set[int]:
    return set(RunStart.objects.filter(session=session).values_list("seq", flat=True))


def walked(session: Session, leaf: str) -> dict[str, object]:
    """The context as the walk gives it (the run starts deleted for the call)."""
    saved = recorded(session)
    RunStart.objects.filter(session=session).delete()
    try:
        return selectors.session_context(session=session, leaf_id=leaf)
    finally:
        RunStart.objects.bulk_create([RunStart(session=session, seq=seq) for seq in saved])


def by_runs(session: Session, leaf: str) -> bool:
    """Whether the context at leaf is read by runs (else walked)."""
    start = selectors._context_start(session, leaf)
    return selectors._by_runs(selectors._CONTEXT_RUNS[connection.vendor], session, leaf, start) is not None


def bounded_statements(seconds: float = 10) -> contextlib.AbstractContextManager[None]:
    """A statement that runs longer fails instead of hanging the test run."""
    return deadline.within(seconds, lambda: AssertionError(f"a statement ran over {seconds:g} s"))


@pytest.fixture
def branched(alice):
    data = generate(2500, 4, compactions=3, labels=15, branch_summary_prob=0.8, custom_prob=0.1)
    session = pipeline.session_import(owner=alice, data=data).session
    assert search_index.wait_for_indexers(60)
    session.refresh_from_db()
    return data, session


def test_the_recorded_run_starts_are_those_of_the_file(branched):
    data, session = branched
    expected = starts_in_file(data)
    assert 20 < len(expected) < 2500
    assert recorded(session) == expected


def test_the_migration_records_what_the_write_path_records(branched):
    data, session = branched
    RunStart.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(MIGRATION.RECORD_ALL)
    assert recorded(session) == starts_in_file(data)
    RunStart.objects.all().delete()
    run_starts.write(session.pk, after=0, upto=None)
    assert recorded(session) == starts_in_file(data)


def test_the_context_by_runs_is_the_walked_context(branched):
    _, session = branched
    ids = list(Entry.objects.filter(session=session).order_by("seq").values_list("entry_id", flat=True))
    for leaf in random.Random(3).sample(ids, 60):
        assert by_runs(session, leaf), leaf
        fast = orjson.loads(selectors.session_context_json(session=session, leaf_id=leaf))
        decoded = selectors.session_context(session=session, leaf_id=leaf)
        assert fast == decoded == walked(session, leaf), leaf


@pytest.mark.parametrize("wrong", ["missing", "extra", "none"])
def test_wrong_run_starts_change_no_answer(branched, wrong):
    _, session = branched
    leaf = session.leaf_id
    assert leaf is not None
    truth = walked(session, leaf)
    starts = sorted(recorded(session))
    if wrong == "missing":  # a branch's first entry not recorded: its range runs on into another branch
        RunStart.objects.filter(session=session, seq__in=starts[len(starts) // 2 :]).delete()
    elif wrong == "extra":  # entries recorded that are not run starts: more, shorter ranges (still right)
        RunStart.objects.bulk_create(
            [RunStart(session=session, seq=s + 1) for s in starts if s + 1 not in starts], ignore_conflicts=True
        )
    else:
        RunStart.objects.filter(session=session).delete()
    assert orjson.loads(selectors.session_context_json(session=session, leaf_id=leaf)) == truth
    assert selectors.session_context(session=session, leaf_id=leaf) == truth
    assert by_runs(session, leaf) == (wrong == "extra")


def test_a_branch_appended_later_gets_its_run_start(alice):
    data = generate(300, 5, compactions=1, labels=3, branch_prob=0.0)
    session = pipeline.session_import(owner=alice, data=data).session
    assert recorded(session) == {1}  # one chain: only the root
    older = Entry.objects.get(session=session, seq=session.last_seq - 5).entry_id
    services.leaf_move(session=session, entry_id=older)
    services.entry_append(session=session, payload=user("a branch"))
    services.entry_append(session=session, payload=user("and on"))
    session.refresh_from_db()
    assert recorded(session) == {1, session.last_seq - 1}
    assert session.leaf_id is not None and by_runs(session, session.leaf_id)
    assert selectors.session_context(session=session) == walked(session, session.leaf_id)


def test_not_tried_while_the_indexer_is_behind(branched):
    _, session = branched
    assert session.leaf_id is not None and by_runs(session, session.leaf_id)
    Session.objects.filter(pk=session.pk).update(indexed_seq=10)
    session.refresh_from_db()
    assert not by_runs(session, session.leaf_id)
    assert selectors.session_context(session=session) == walked(session, session.leaf_id)


def test_deleted_with_the_session_and_rebuilt_by_a_reindex(branched, alice):
    data, session = branched
    RunStart.objects.filter(session=session).delete()
    search_index.reindex_all()
    assert recorded(session) == starts_in_file(data)
    services.session_delete(session=session)
    assert not RunStart.objects.filter(session_id=session.pk).exists()


def test_a_parent_written_after_its_child_is_walked_and_the_read_ends(alice):
    # pi can write a child before its parent: seq follows the file, so the parent's seq is higher.
    # With the run starts above the child's branch not yet recorded (the indexer behind), the
    # ranges' step from the child to its parent would name the same range forever.
    data = jsonl(
        header(),
        entry("a", None),
        entry("c", "b"),
        entry("d", "c"),
        entry("b", "a"),
    )
    session = pipeline.session_import(owner=alice, data=data).session
    assert recorded(session) == starts_in_file(data) == {1, 2, 4}
    seqs = dict(Entry.objects.filter(session=session).values_list("entry_id", "seq"))
    assert seqs == {"a": 1, "c": 2, "d": 3, "b": 4}
    RunStart.objects.filter(session=session, seq=4).delete()
    Session.objects.filter(pk=session.pk).update(indexed_seq=3)
    session.refresh_from_db()
    for leaf in ("c", "d"):
        with bounded_statements():
            assert not by_runs(session, leaf)  # (ends, and the path is walked)
        context = selectors.session_context(session=session, leaf_id=leaf)
        assert [m["content"][0]["text"] for m in context["messages"]][:2] == ["text of a", "text of b"]
        assert orjson.loads(selectors.session_context_json(session=session, leaf_id=leaf)) == context
