"""Search never reaches a session its user may not read (issue 18): another user's personal
sessions and another team's sessions stay out of every way in (store/search.py, GET /api/search,
the /search/ page, the session list's text filter), ranked or in recency order, and a session:
or team: filter naming them finds nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions_app.access import teams
from sessions_app.store import explorer, search, services
from tests.builders import user

pytestmark = pytest.mark.django_db

WORD = "okapiword"


def _session(owner: Any, name: str, team: Any = None, entries: int = 3) -> Any:
    s = services.session_create(owner=owner, name=name)
    for i in range(entries):
        services.entry_append(session=s, payload=user(f"{WORD} {name} {i}", 1_767_600_000_000 + i), author=owner)
    if team is not None:
        teams.session_move_to_team(session=s, team=team, actor=owner)
    return s


@pytest.fixture
def world(django_user_model, alice, bob):
    """bob's own session and team One's (bob a viewer there) are his to read; alice's personal
    session and team Two's (carol's team) are not."""
    carol = django_user_model.objects.create_user("carol", password="x")
    one = teams.team_create(name="One", creator=alice)
    two = teams.team_create(name="Two", creator=carol)
    teams.member_invite(team=one, username="bob", role="viewer", actor=alice)
    readable = {_session(bob, "bobs").public_id, _session(alice, "ones", one).public_id}
    hidden = {_session(alice, "alices").public_id, _session(carol, "twos", two).public_id}
    return readable, hidden


@pytest.mark.parametrize("window", [search.RANK_WINDOW, 2])  # ranked, and too many to rank
def test_another_user_s_and_another_team_s_sessions_never_appear(bob, world, monkeypatch, window):
    monkeypatch.setattr(search, "RANK_WINDOW", window)
    readable, hidden = world
    found = search.search(user=bob, q=WORD, limit=100)
    assert found.ranked is (window > 6)
    assert {h.session_id for h in found.hits} == readable
    assert len(found.hits) == 6

    client = Client()
    client.force_login(bob)
    api = client.get("/api/search", {"q": WORD, "limit": "100"}).json()
    assert {h["sessionId"] for h in api["hits"]} == readable
    page = client.get("/search/", {"q": WORD}).content.decode()
    assert all(sid in page for sid in readable) and not any(sid in page for sid in hidden)
    listed = {s.public_id for s in explorer.session_list(user=bob, search=WORD)}
    assert listed == readable

    for sid in hidden:  # a filter naming one of them reaches nothing
        assert search.search(user=bob, q=f"{WORD} session:{sid}").hits == []
    assert search.search(user=bob, q=f"{WORD} team:Two").hits == []
    in_one = {h.session_id for h in search.search(user=bob, q=f"{WORD} team:One").hits}
    assert len(in_one) == 1 and in_one < readable
