"""batches: IN (...) over any number of values, one statement per batch."""

from __future__ import annotations

import pytest

from sessions_app.models import Entry
from sessions_app.store import selectors, services
from sessions_app.store.batches import IN_BATCH, in_batches, select_in
from tests.builders import user

pytestmark = pytest.mark.django_db


def test_in_batches_asks_once_per_batch_and_never_for_nothing():
    calls: list[list[int]] = []

    def query(part: list[int]) -> list[int]:
        calls.append(part)
        return [v * 10 for v in part]

    assert in_batches(range(5), query, size=2) == [0, 10, 20, 30, 40]
    assert calls == [[0, 1], [2, 3], [4]]
    assert in_batches([], query) == [] and len(calls) == 3


def test_select_in_reads_every_batch(alice, django_assert_num_queries):
    session = services.session_create(owner=alice)
    ids = [services.entry_append(session=session, payload=user(f"m{k}")).entry_id for k in range(3)]
    wanted = [*ids, *(f"missing-{k}" for k in range(2 * IN_BATCH))]
    sql = "SELECT entry_id FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({marks})"
    with django_assert_num_queries(3):
        assert sorted(r[0] for r in select_in(sql, [session.pk], wanted)) == sorted(ids)
    with django_assert_num_queries(3):
        assert selectors.entry_ids_present(session=session, ids=wanted) == set(ids)
    assert Entry.objects.filter(session=session).count() == 3
