"""Imports from the page run in the background with real progress: the POST answers at once with
a fragment that polls /import/<job>/ every 300 ms; the job's progress (bytes parsed, from the
service's callback) is in the cache; when done the fragment becomes the result (or the rejected
file's line-numbered errors). Only the importing user sees a job; team imports need "import"."""

from __future__ import annotations

import re
import time

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.test import Client

from sessions_app.access import teams
from sessions_app.models import Session
from sessions_app.store.importing import background
from tests.caches import RecordingCache
from tests.xss import session_file

pytestmark = pytest.mark.django_db

SID = "55555555-5555-4555-8555-555555555555"


def good_file(sid: str = SID, n: int = 3) -> bytes:
    return session_file(sid, [{"type": "message", "message": {"role": "user", "content": f"hi {k}", "timestamp": k}}
                       for k in range(n)])  # fmt: skip


def job_id(html: str) -> str:
    found = re.search(r'data-job="([^"]+)"', html)
    assert found, html
    return found.group(1)


@pytest.fixture
def inline(settings):
    settings.PIWEB_IMPORT_BACKGROUND = False  # the test's transaction is invisible to other threads


def test_a_running_job_polls_and_shows_how_far_it_is(htmx_client, alice):
    job: background.Job = {
        "id": "j1", "user": alice.pk, "name": "a <b>.jsonl", "total": 4_000_000, "done": 1_000_000, "state": "running"
    }  # fmt: skip
    background._put(job)
    html = htmx_client.get("/import/j1/").content.decode()
    assert 'hx-trigger="every 300ms"' in html and 'hx-get="/import/j1/"' in html
    assert 'value="1000000"' in html and 'max="4000000"' in html and "25%" in html
    assert "a &lt;b&gt;.jsonl" in html


def test_a_background_import_reports_progress_and_its_result(htmx_client, alice, inline, settings, generated):
    settings.CACHES = RecordingCache.CACHES  # each state of the job, as the progress page reads it
    RecordingCache.writes.clear()
    data = generated(2500, seed=5)  # a few MiB: the service reports progress on the way
    r = htmx_client.post("/import/", {"files": [SimpleUploadedFile("big.jsonl", data)], "background": "1"})
    assert r.status_code == 202
    session = Session.objects.get(owner=alice)
    seen = [
        (v["state"], v["done"], v["total"]) for _, v in RecordingCache.writes if isinstance(v, dict) and "state" in v
    ]
    running = [done for state, done, _ in seen if state == "running"]
    assert running[0] == 0 and any(0 < d < len(data) for d in running), seen
    assert running == sorted(running)
    assert seen[-1] == ("done", len(data), len(data))
    html = htmx_client.get(f"/import/{job_id(r.content.decode())}/").content.decode()
    assert "import-result ok" in html and "every 300ms" not in html and "data-job-done" in html
    assert f'href="/sessions/{session.public_id}/"' in html


def test_a_rejected_background_import_shows_line_numbers(htmx_client, alice, inline):
    data = good_file() + b"not json\n"
    r = htmx_client.post("/import/", {"files": [SimpleUploadedFile("bad.jsonl", data)], "background": "1"})
    html = htmx_client.get(f"/import/{job_id(r.content.decode())}/").content.decode()
    assert "import-result bad" in html and "was rejected" in html and "line 5" in html
    assert not Session.objects.filter(owner=alice).exists()


def test_only_the_importing_user_sees_a_job(htmx_client, alice, bob, inline):
    r = htmx_client.post("/import/", {"files": [SimpleUploadedFile("a.jsonl", good_file())], "background": "1"})
    url = f"/import/{job_id(r.content.decode())}/"
    assert htmx_client.get(url).status_code == 200
    other = Client()
    other.force_login(bob)
    assert other.get(url).status_code == 404
    assert Client().get(url).status_code == 302  # signed out: to sign in
    assert Client().get("/import/nope/").status_code == 302
    bob_htmx = Client(headers={"HX-Request": "true"})
    bob_htmx.force_login(bob)
    assert bob_htmx.get(url).status_code == 286  # someone else's job: stop polling, reveal nothing
    assert "no longer tracked" in bob_htmx.get(url).content.decode()
    assert other.get("/import/nope/").status_code == 404


def test_a_lost_job_stops_the_polling(htmx_client):
    response = htmx_client.get("/import/lost-in-a-restart/")
    assert response.status_code == 286  # htmx's "stop polling"
    assert "Reload the list" in response.content.decode()


def test_importing_into_a_team_needs_the_import_capability(alice, bob, inline):
    team = teams.team_create(name="T", creator=alice)
    teams.member_invite(team=team, username="bob", role="reviewer", actor=alice)
    client = Client(headers={"HX-Request": "true"})
    client.force_login(bob)
    upload = SimpleUploadedFile("a.jsonl", good_file())
    r = client.post("/import/", {"files": [upload], "background": "1", "team": team.public_id})
    assert r.status_code == 403 and not Session.objects.exists()
    teams.member_role_set(team=team, user=bob, role="editor", actor=alice)
    upload = SimpleUploadedFile("a.jsonl", good_file())
    r = client.post("/import/", {"files": [upload], "background": "1", "team": team.public_id})
    assert r.status_code == 202 and "import-result ok" in r.content.decode()
    assert Session.objects.get(public_id=SID).team_id == team.pk


@pytest.mark.django_db(transaction=True)
def test_an_import_in_a_real_thread_closes_its_connection(alice, monkeypatch):
    closed: list[bool] = []
    real_close = connections.close_all

    def close_all() -> None:
        closed.append(True)
        real_close()

    monkeypatch.setattr(connections, "close_all", close_all)
    client = Client(headers={"HX-Request": "true"})
    client.force_login(alice)
    r = client.post("/import/", {"files": [SimpleUploadedFile("a.jsonl", good_file())], "background": "1"})
    url = f"/import/{job_id(r.content.decode())}/"
    for _ in range(100):
        html = client.get(url).content.decode()
        if "data-job-done" in html:
            break
        time.sleep(0.1)
    assert "import-result ok" in html and closed == [True]
    assert Session.objects.filter(public_id=SID, owner=alice).exists()
    cache.clear()
