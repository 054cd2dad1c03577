"""The usage pages (a session's, a team's) and the session list's cost column: what they show and
who may see them."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions_app.access import teams
from sessions_app.models import Session, StreamingTurn
from sessions_app.store import services
from sessions_app.store.importing import pipeline
from tests.builders import assistant, paid, user

pytestmark = pytest.mark.django_db

DAY = 86_400_000
T0 = 1_767_600_000_000  # 2026-01-05 08:00 UTC


def branched(owner: Any, name: str = "Costly") -> tuple[Session, dict[str, str]]:
    """q -> a1 ($0.25, sonnet) on one branch; q -> a2 ($1.50, opus) -> q2 -> a3 ($0.50) current."""
    s = services.session_create(owner=owner, name=name)
    ids: dict[str, str] = {}
    ids["q"] = services.entry_append(session=s, payload=user("question", T0), author=owner).entry_id
    a1 = assistant("first try", T0 + 1000, usage=paid(0.25, 100))
    ids["a1"] = services.entry_append(session=s, payload=a1, author=owner).entry_id
    services.leaf_move(session=s, entry_id=ids["q"])
    a2 = assistant("second try", T0 + DAY, model="claude-opus-4-5", usage=paid(1.5, 300))
    ids["a2"] = services.entry_append(session=s, payload=a2, author=owner).entry_id
    ids["q2"] = services.entry_append(session=s, payload=user("more", T0 + DAY + 1), author=owner).entry_id
    a3 = assistant("done", T0 + 8 * DAY, usage=paid(0.5, 700))
    ids["a3"] = services.entry_append(session=s, payload=a3, author=owner).entry_id
    s.refresh_from_db()
    return s, ids


def test_session_usage_page(alice, alice_client):
    s, ids = branched(alice)
    # a3 came from a chat turn alice ran in piweb
    StreamingTurn.objects.create(public_id=uuid.uuid4(), session=s, parent_id=ids["q2"], entry_id=ids["a3"],
                                 status="done", author=alice)  # fmt: skip
    page = alice_client.get(f"/sessions/{s.public_id}/")
    assert f'href="/sessions/{s.public_id}/usage/"' in page.content.decode()  # linked from the header
    r = alice_client.get(f"/sessions/{s.public_id}/usage/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "<script>" not in html and "<script " not in html.split("</head>")[1]
    total = re.search(r"data-total-cost>([^<]*)<", html)
    assert total and total.group(1) == "$2.25"
    rows = dict(re.findall(r'<tr data-branch="([^"]+)"[^>]*>(.*?)</tr>', html, re.S))
    assert set(rows) == {ids["a1"], ids["a3"]}
    assert "data-current" in rows[ids["a3"]] and "$2.00" in rows[ids["a3"]]
    assert "data-abandoned" in rows[ids["a1"]] and "$0.2500" in rows[ids["a1"]]
    models = html.split("data-usage-models")[1].split("</table>")[0]
    assert models.index("claude-opus-4-5") < models.index("claude-sonnet-4-5")  # most expensive first
    assert "$0.7500" in models  # sonnet: 0.25 + 0.5
    users = html.split("data-usage-users")[1].split("</table>")[0]
    # a3 through alice's chat turn; a1 and a2 appended by alice (their entries name her)
    assert "alice" in users and "$2.25" in users
    charts = re.findall(r'<svg class="usage-chart".*?</svg>', html, re.S)
    assert len(charts) == 2
    assert len(re.findall(r"<rect ", charts[0])) == 2 and 'class="bar current"' in charts[0]
    assert charts[1].count(",") == 2  # two replies on the current path: a2, a3


def test_per_user_counts_turns_and_authored_replies(alice, bob, alice_client):
    s, ids = branched(alice)
    StreamingTurn.objects.create(public_id=uuid.uuid4(), session=s, parent_id=ids["q2"], entry_id=ids["a3"],
                                 status="done", author=bob)  # fmt: skip
    html = alice_client.get(f"/sessions/{s.public_id}/usage/").content.decode()
    users = dict(
        re.findall(r"<tr><td>(\w+)</td><td>[^<]*</td><td>([^<]*)</td></tr>", html.split("data-usage-users")[1])
    )
    assert users == {"alice": "$1.75", "bob": "$0.5000"}


def test_an_imported_sessions_replies_are_no_ones_piweb_chats(alice, alice_client, generated):
    """An import names its importer as every row's author: that is not a chat made in piweb."""
    imported = pipeline.session_import(owner=alice, data=generated(300, 5)).session
    html = alice_client.get(f"/sessions/{imported.public_id}/usage/").content.decode()
    assert "No chat turns were run in piweb" in html and "<tr><td>alice</td>" not in html


def test_absurd_usage_numbers_and_times_are_no_counts_and_no_500(alice, alice_client):
    """A hostile reply: tokens beyond any real count, a time 30,000 years away."""
    team = teams.team_create(name="Odd", creator=alice)
    s = services.session_create(owner=alice, name="odd")
    for tokens in (1e30, 10**40, float("nan")):
        payload = assistant("x", T0, usage={**paid(0.5, 1), "totalTokens": tokens, "input": tokens})
        services.entry_append(session=s, payload=payload, author=alice)
    services.entry_append(session=s, payload=assistant("far", 10**15, usage=paid(0.25, 10)), author=alice)
    s.refresh_from_db()
    assert s.total_tokens == 10 and s.cost == 1.75  # the absurd counts are no counts; the costs add up
    teams.session_move_to_team(session=s, team=team, actor=alice)
    assert alice_client.get(f"/sessions/{s.public_id}/usage/").status_code == 200
    r = alice_client.get(f"/teams/{team.public_id}/usage/")
    assert r.status_code == 200 and "2026-01-05" in r.content.decode()


def test_usage_page_is_for_readers_only(alice, bob_client):
    s, _ = branched(alice)
    assert bob_client.get(f"/sessions/{s.public_id}/usage/").status_code == 404
    anonymous = Client().get(f"/sessions/{s.public_id}/usage/")
    assert anonymous.status_code in (302, 404)


def test_usage_page_escapes_previews(alice, alice_client):
    s = services.session_create(owner=alice, name="x")
    services.entry_append(session=s, payload=user("<img src=x onerror=alert(1)>"), author=alice)
    html = alice_client.get(f"/sessions/{s.public_id}/usage/").content.decode()
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_team_usage_per_day_and_week(alice, bob, alice_client, bob_client):
    team = teams.team_create(name="Crew", creator=alice)
    s, _ = branched(alice)
    teams.session_move_to_team(session=s, team=team, actor=alice)
    r = alice_client.get(f"/teams/{team.public_id}/usage/")
    assert r.status_code == 200
    html = r.content.decode()
    assert re.search(r"data-team-total>\$2.25<", html)
    days = dict(re.findall(r"<tr><td>(\d{4}-\d\d-\d\d)</td><td>([^<]*)</td></tr>", html.split("data-usage-days")[1]))
    assert days == {"2026-01-05": "$0.2500", "2026-01-06": "$1.50", "2026-01-13": "$0.5000"}
    weeks = dict(
        re.findall(
            r"<tr><td>(\d{4}-\d\d-\d\d)</td><td>([^<]*)</td></tr>",
            html.split("data-usage-weeks")[1].split("</table>")[0],
        )
    )
    assert weeks == {"2026-01-05": "$1.75", "2026-01-12": "$0.5000"}
    assert f'href="/teams/{team.public_id}/usage/"' in alice_client.get(f"/teams/{team.public_id}/").content.decode()
    assert bob_client.get(f"/teams/{team.public_id}/usage/").status_code == 404


def test_session_list_cost_column_reads_no_entries(alice, alice_client):
    s, _ = branched(alice, name="Costly")
    services.session_create(owner=alice, name="Free")
    with CaptureQueriesContext(connection) as queries:
        html = alice_client.get("/?sort=cost").content.decode()
    assert not [q for q in queries.captured_queries if "sessions_app_entry" in q["sql"] and "label" not in q["sql"]]
    row = re.search(rf'id="session-{s.public_id}".*?data-cost="([^"]+)">([^<]*)<', html, re.S)
    assert row and float(row.group(1)) == pytest.approx(2.25) and row.group(2) == "$2.25"
    assert html.index("Costly") < html.index("Free")  # sorted by cost
    assert alice_client.get("/?sort=cost").status_code == 200
