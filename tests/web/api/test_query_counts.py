"""The list and tree endpoints use a fixed number of queries, whatever the data size."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.store import services
from tests.builders import user
from tests.web.api.helpers import url

pytestmark = pytest.mark.django_db

MAX_QUERIES = 5  # Django session + user, then the API's own reads
# The tree adds: labels, chunk-end chain hashes, label targets' seqs, and the cold read of the nodes.
MAX_TREE_QUERIES = 7


def count_queries(client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
        assert response.status_code == 200
    return len(ctx.captured_queries)


def test_list_queries_do_not_grow_with_sessions(alice, alice_client, django_assert_max_num_queries):
    sessions = []
    for i in range(2):
        sessions.append(services.session_create(owner=alice, name=f"s{i}"))
    small = count_queries(alice_client, url())
    for i in range(2, 25):
        session = services.session_create(owner=alice, name=f"s{i}")
        services.entry_append(session=session, payload=user(f"hi {i}"))
        sessions.append(session)
    # forks point at a parent session: listing their parentSessionId must not cost a query each
    for session in sessions[2:7]:
        assert session.leaf_id is not None
        services.session_fork(session=session, entry_id=session.leaf_id, owner=alice)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = alice_client.get(url())
    assert len(response.json()) == 30
    assert sum(1 for s in response.json() if s["parentSessionId"]) == 5
    assert count_queries(alice_client, url()) == small


def test_tree_queries_do_not_grow_with_entries(alice, alice_client, generated, django_assert_max_num_queries):
    from django.core.files.uploadedfile import SimpleUploadedFile

    small_id = alice_client.post(
        url(suffix="/import"), {"file": SimpleUploadedFile("a.jsonl", generated(entries=10, seed=1, labels=2))}
    ).json()["id"]
    big_id = alice_client.post(
        url(suffix="/import"),
        {"file": SimpleUploadedFile("b.jsonl", generated(entries=600, seed=2, labels=30, branch_prob=0.2))},
    ).json()["id"]
    from django.core.cache import cache

    small = count_queries(alice_client, url(small_id, "/tree"))
    cache.clear()  # compare cold reads; warm ones come from the cache
    with django_assert_max_num_queries(MAX_TREE_QUERIES):
        response = alice_client.get(url(big_id, "/tree"))
    assert len(response.json()["nodes"]) == 600
    cache.clear()
    assert count_queries(alice_client, url(big_id, "/tree")) == small


def test_tree_is_cached_until_the_session_gains_an_entry(alice, alice_client, generated):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = generated(entries=50, seed=3, labels=3)
    session_id = alice_client.post(url(suffix="/import"), {"file": SimpleUploadedFile("c.jsonl", data)}).json()["id"]
    from django.core.cache import cache

    cold = alice_client.get(url(session_id, "/tree")).content
    warm_queries = count_queries(alice_client, url(session_id, "/tree"))
    assert alice_client.get(url(session_id, "/tree")).content == cold
    cache.clear()
    assert warm_queries < count_queries(alice_client, url(session_id, "/tree"))  # the node list was not read
    created = alice_client.post(
        url(session_id, "/entries"), {"type": "custom", "customType": "note"}, content_type="application/json"
    )
    assert created.status_code == 201
    after = alice_client.get(url(session_id, "/tree")).json()
    assert after["nodes"][-1]["id"] == created.json()["id"]
    assert after["leafId"] == created.json()["id"]


def test_token_auth_adds_at_most_two_queries(alice, token_client, django_assert_max_num_queries):
    for i in range(10):
        services.session_create(owner=alice, name=f"s{i}")
    token_client.get(url())  # records last_used_at (one UPDATE, at most once a minute)
    with django_assert_max_num_queries(2):
        assert len(token_client.get(url()).json()) == 10
