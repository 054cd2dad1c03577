"""The `piweb` command end to end: a real daphne on the test database, real files in pi's layout,
the CLI as its own process (it imports nothing of the server)."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import sys
import threading
import time

import pytest
import websockets
from django.test import Client

from sessions_app.access.api_tokens import api_token_create
from sessions_app.core import jsjson
from sessions_app.models import Session
from sessions_app.store import services
from tests.generate import generate
from tests.paths import LARGE_SESSION
from tests.servers import ROOT, login_cookie
from tests.sync.harness import Server, pi_file, pi_id, wait_for

pytestmark = [pytest.mark.django_db(transaction=True)]


def cut(data: bytes, lines: int) -> bytes:
    at = 0
    for _ in range(lines):
        at = data.index(b"\n", at) + 1
    return data[:at]


def test_the_cli_imports_nothing_of_django():
    code = "import sys, piweb.cli, piweb.cli.sync, piweb.cli.watch, piweb.cli.pull; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_torn_line_waits_then_sync_resumes_and_pull_is_byte_for_byte(tmp_path, server, run_cli, read_token):
    data = generate(80, seed=31, branch_prob=0.1, labels=3)
    sessions = tmp_path / "sessions"
    path = pi_file(sessions, cut(data, 30) + cut(data, 31)[len(cut(data, 30)) :][:-40])  # line 31 half written
    first = run_cli("sync", str(sessions))
    assert first.returncode == 0, first.stderr
    assert "1 created" in first.stdout and "30 line(s) sent" in first.stdout
    session = Session.objects.get(public_id=pi_id(data))
    assert session.source_lines == 30 and session.source_bytes == len(cut(data, 30))
    path.write_bytes(data)  # pi finishes the line and goes on
    second = run_cli("sync", str(sessions))
    lines = data.count(b"\n")
    assert "1 appended" in second.stdout and f"{lines - 30} line(s) sent" in second.stdout
    again = run_cli("sync", str(sessions))
    assert "1 current" in again.stdout and "0 line(s) sent" in again.stdout  # idempotent
    session.refresh_from_db()
    assert (session.origin_path, session.source_bytes) == (str(path.resolve()), len(data))
    pulled = run_cli("pull", pi_id(data), "-o", str(tmp_path / "pulled.jsonl"), token=read_token)
    assert pulled.returncode == 0, pulled.stderr
    assert (tmp_path / "pulled.jsonl").read_bytes() == data


def test_pull_into_pi_puts_the_file_where_resume_finds_it(tmp_path, server, run_cli, read_token):
    data = generate(20, seed=32)
    pi_file(tmp_path / "elsewhere", data)
    assert run_cli("sync", str(tmp_path / "elsewhere")).returncode == 0
    pulled = run_cli("pull", pi_id(data), "--into-pi", token=read_token)
    assert pulled.returncode == 0, pulled.stderr
    expected = pi_file(tmp_path / "expected", data)
    written = tmp_path / ".pi" / "agent" / "sessions" / expected.parent.name / expected.name
    assert pulled.stdout.strip() == str(written)
    assert written.read_bytes() == data


def test_a_push_token_cannot_pull(tmp_path, server, run_cli):
    data = generate(20, seed=33)
    pi_file(tmp_path / "s", data)
    assert run_cli("sync", str(tmp_path / "s")).returncode == 0
    pulled = run_cli("pull", pi_id(data), "-o", str(tmp_path / "p.jsonl"))
    assert pulled.returncode == 1 and "403" in pulled.stderr
    assert not (tmp_path / "p.jsonl").exists()


def test_a_rewritten_file_is_reported_never_merged(tmp_path, server, run_cli):
    data = generate(40, seed=34)
    path = pi_file(tmp_path / "s", data)
    assert run_cli("sync", str(tmp_path / "s")).returncode == 0
    head, rest = data.split(b"\n", 1)
    path.write_bytes(head + b"\n" + rest.replace(b'"text":"', b'"text":"rewritten ', 1))
    result = run_cli("sync", str(tmp_path / "s"))
    assert result.returncode == 1
    assert "1 changed" in result.stdout
    assert "rewritten or truncated" in result.stderr
    path.write_bytes(cut(data, 10))  # truncated
    assert "1 changed" in run_cli("sync", str(tmp_path / "s")).stdout
    session = Session.objects.get(public_id=pi_id(data))
    assert session.source_bytes == len(data) and session.last_seq == data.count(b"\n") - 1


def test_v1_file_is_migrated_as_the_import_does(tmp_path, server, run_cli, read_token):
    source = LARGE_SESSION.read_bytes()  # pi's own v1 file
    pi_file(tmp_path / "s", source)
    result = run_cli("sync", str(tmp_path / "s"))
    assert result.returncode == 0, result.stderr + result.stdout
    session = Session.objects.get(public_id=pi_id(source))
    assert session.last_seq == source.strip().count(b"\n")
    assert "1 current" in run_cli("sync", str(tmp_path / "s")).stdout
    pulled = run_cli("pull", pi_id(source), "-o", str(tmp_path / "p.jsonl"), token=read_token)
    assert pulled.returncode == 0
    assert json.loads((tmp_path / "p.jsonl").read_bytes().split(b"\n", 1)[0])["version"] == 3


def test_exclude_and_dry_run(tmp_path, server, run_cli):
    one, two = generate(10, seed=35), generate(10, seed=36)
    pi_file(tmp_path / "s", one, cwd="/a")
    pi_file(tmp_path / "s", two, cwd="/b")
    dry = run_cli("sync", "--dry-run", str(tmp_path / "s"))
    assert "2 would push" in dry.stdout and not Session.objects.exists()
    result = run_cli("sync", "--exclude=--b--/*", str(tmp_path / "s"))
    assert "1 created" in result.stdout
    assert list(Session.objects.values_list("public_id", flat=True)) == [pi_id(one)]


def test_login_writes_a_private_config_used_afterwards(tmp_path, server, run_cli, push_token):
    login = run_cli("login", "--server", server.url, "--token", push_token, PIWEB_SERVER="", PIWEB_TOKEN="")
    assert login.returncode == 0, login.stderr
    config = tmp_path / ".config" / "piweb" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    pi_file(tmp_path / "s", generate(10, seed=37))
    assert "1 created" in run_cli("sync", str(tmp_path / "s"), PIWEB_SERVER="", PIWEB_TOKEN="").stdout
    missing = run_cli("sync", str(tmp_path / "s"), PIWEB_SERVER="", PIWEB_TOKEN="", PIWEB_CONFIG=str(tmp_path / "x"))
    assert missing.returncode == 2 and "no server" in missing.stderr


def appender(path, data: bytes, start: int, pause: float = 0.01) -> threading.Thread:
    """A thread that appends data's lines after the first `start`, half a line at a time, as pi does."""

    def run() -> None:
        at = len(cut(data, start))
        while at < len(data):
            end = data.index(b"\n", at) + 1
            middle = (at + end) // 2
            with path.open("ab") as f:
                f.write(data[at:middle])
                f.flush()
                time.sleep(pause)
                f.write(data[middle:end])
            at = end
            time.sleep(pause)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_watch_follows_appends_while_it_syncs_and_stops_on_ctrl_c(tmp_path, server, watchers, push_token):
    data = generate(150, seed=38, branch_prob=0.1)
    path = pi_file(tmp_path / "s", cut(data, 5))
    watcher = watchers(server, push_token, tmp_path / "s")
    writer = appender(path, data, 5)
    writer.join()
    wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("bytes") == len(data))
    # and one more line: it arrives within a second or so (the benchmark measures it properly)
    more = generate(151, seed=38, branch_prob=0.1)
    with path.open("ab") as f:
        f.write(more[len(data) :])
    took = wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("bytes") == len(more))
    assert took < 5
    later = generate(12, seed=45)  # a session pi starts while the watcher runs
    started = pi_file(tmp_path / "s", later, cwd="/home/dev/other")
    wait_for(lambda: (server.state(push_token, pi_id(later)) or {}).get("bytes") == len(later))
    # Stopped once the watcher has its answer too: the server stores the file before the watcher
    # hears back, and a Ctrl+C in between would leave the push out of the watcher's summary.
    wait_for(lambda: f"{started.name}: created" in watcher.log.read_text())
    output = watcher.stop()
    assert watcher.proc.returncode == 0, output
    assert "piweb sync: 2 file(s)" in output.splitlines()[-1]
    assert "watching 1 folder(s) by" in output
    session = Session.objects.get(public_id=pi_id(data))
    assert session.last_seq == more.count(b"\n") - 1  # every entry once


@pytest.mark.parametrize("polling", [False, True], ids=["watchdog", "polling"])
def test_an_idle_watch_pushes_nothing_and_a_refused_file_is_not_retried_in_a_loop(
    tmp_path, server, watchers, push_token, polling
):
    """Reading a file to push it is no change to it (watchdog reports the opens and closes): an
    idle watcher sends nothing. A file the server refuses is reported, with the line and the
    reason, when it changes; not again and again while it does not."""
    data = generate(30, seed=46)
    pi_file(tmp_path / "s", data)
    watcher = watchers(server, push_token, tmp_path / "s", polling=polling)
    wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("bytes") == len(data))
    refused = generate(10, seed=47)
    pi_file(tmp_path / "s", refused + b'{"type":"message","id":"x"\n', cwd="/home/dev/other")
    time.sleep(2.5)
    output = watcher.stop()
    summary = output.splitlines()[-1]
    assert "current" not in summary, output  # a push for every read of its own was hundreds
    failed = [line for line in output.splitlines() if ": failed:" in line]
    assert 1 <= len(failed) <= 2, output
    assert "line 12" in failed[0], failed[0]


def test_watch_survives_a_server_restart_without_duplicates(tmp_path, server, watchers, push_token):
    data = generate(120, seed=39)
    path = pi_file(tmp_path / "s", cut(data, 20))
    watcher = watchers(server, push_token, tmp_path / "s", polling=True)
    wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("lines") == 20)
    server.stop()
    writer = appender(path, data, 20, pause=0.002)  # appends while the server is down...
    time.sleep(0.5)
    server.start()  # ...and while it comes back
    writer.join()
    wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("bytes") == len(data), timeout=30)
    output = watcher.stop()
    assert "retrying" in output and "by polling" in output
    session = Session.objects.get(public_id=pi_id(data))
    assert session.last_seq == data.count(b"\n") - 1


def test_two_machines_push_different_sessions_at_once(tmp_path, server, watchers, alice, bob, push_token):
    bob_token = api_token_create(user=bob, scope="push")[1]
    mine, theirs = generate(200, seed=40), generate(200, seed=41)
    a = pi_file(tmp_path / "alice", cut(mine, 3))
    b = pi_file(tmp_path / "bob", cut(theirs, 3))
    watchers(server, push_token, tmp_path / "alice", PIWEB_HOST="alice-laptop")
    watchers(server, bob_token, tmp_path / "bob", PIWEB_HOST="bob-desktop")
    writers = [appender(a, mine, 3, pause=0.001), appender(b, theirs, 3, pause=0.001)]
    for writer in writers:
        writer.join()
    wait_for(lambda: (server.state(push_token, pi_id(mine)) or {}).get("bytes") == len(mine), timeout=30)
    wait_for(lambda: (server.state(bob_token, pi_id(theirs)) or {}).get("bytes") == len(theirs), timeout=30)
    hers, his = Session.objects.get(public_id=pi_id(mine)), Session.objects.get(public_id=pi_id(theirs))
    assert (hers.owner, hers.origin_host, hers.last_seq) == (alice, "alice-laptop", mine.count(b"\n") - 1)
    assert (his.owner, his.origin_host, his.last_seq) == (bob, "bob-desktop", theirs.count(b"\n") - 1)


def pi_rewrite(v3: bytes, more: int = 2) -> bytes:
    """What pi writes when it opens a migrated file: new ids for every entry (its migration is
    random), nothing else changed; then `more` entries appended as pi goes on."""
    lines = v3.splitlines()
    header, entries = lines[0], [json.loads(line) for line in lines[1:]]
    new_ids = {e["id"]: f"{i + 1:08x}" for i, e in enumerate(entries)}
    out = [header]
    for entry in entries:
        entry["id"] = new_ids[entry["id"]]
        if entry.get("parentId") is not None:
            entry["parentId"] = new_ids[entry["parentId"]]
        if "firstKeptEntryId" in entry:
            entry["firstKeptEntryId"] = new_ids[entry["firstKeptEntryId"]]
        out.append(jsjson.dumps(entry).encode())
    last = entries[-1]["id"]
    for n in range(more):
        entry_id = f"f{n:07x}"
        text = {"role": "user", "content": f"after the migration {n}", "timestamp": 1_767_000_000_000 + n}
        line = {"type": "message", "id": entry_id, "parentId": last, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": text}  # fmt: skip
        out.append(jsjson.dumps(line).encode())
        last = entry_id
    return b"\n".join(out) + b"\n"


def test_pis_in_place_migration_replaces_the_mirror_and_keeps_labels(tmp_path, server, run_cli, alice, read_token):
    source = LARGE_SESSION.read_bytes()  # pi's own v1 file
    path = pi_file(tmp_path / "s", source)
    assert run_cli("sync", str(tmp_path / "s")).returncode == 0
    session = Session.objects.get(public_id=pi_id(source))
    fifth = session.entries.order_by("seq")[4]
    services.label_set(session=session, target_id=fifth.entry_id, label="look here", author=alice)
    pulled = run_cli("pull", pi_id(source), "-o", str(tmp_path / "v3.jsonl"), token=read_token)
    assert pulled.returncode == 0, pulled.stderr
    rewritten = pi_rewrite((tmp_path / "v3.jsonl").read_bytes())
    path.write_bytes(rewritten)
    result = run_cli("sync", str(tmp_path / "s"))
    assert result.returncode == 0, result.stderr
    assert "1 replaced" in result.stdout
    mirror = Session.objects.get(public_id=pi_id(source))
    assert mirror.pk != session.pk and mirror.owner == alice
    labels = [json.loads(raw) for raw in mirror.entries.filter(type="label").values_list("raw", flat=True)]
    new_fifth = json.loads(rewritten.splitlines()[5])["id"]
    assert [(lb["targetId"], lb.get("label")) for lb in labels] == [(new_fifth, "look here")]
    again = run_cli("pull", pi_id(source), "-o", str(tmp_path / "again.jsonl"), token=read_token)
    assert again.returncode == 0
    assert (tmp_path / "again.jsonl").read_bytes() == rewritten  # the labels stay out of the pull
    assert "1 current" in run_cli("sync", str(tmp_path / "s")).stdout


def test_watch_survives_a_restart_in_the_middle_of_a_first_push(tmp_path, processes, watchers, push_token):
    server = Server(processes, PIWEB_SYNC_STALE_SECONDS="2")
    server.start()
    data = generate(12_000, seed=42)
    pi_file(tmp_path / "s", data)
    watcher = watchers(server, push_token, tmp_path / "s")
    wait_for(lambda: Session.objects.filter(staging=True).exists(), timeout=60)  # rows are being written
    server.stop()
    server.start()
    wait_for(lambda: (server.state(push_token, pi_id(data)) or {}).get("bytes") == len(data), timeout=120)
    output = watcher.stop()
    assert "retrying" in output
    session = Session.objects.get(public_id=pi_id(data))
    assert session.last_seq == data.count(b"\n") - 1
    assert not Session.objects.filter(staging=True).exists()  # the stopped import's rows went whole


def test_a_viewer_sees_pushed_lines_live_and_the_page_says_where_they_come_from(
    tmp_path, server, run_cli, alice, push_token
):
    data = generate(30, seed=43)
    path = pi_file(tmp_path / "s", cut(data, 10), cwd="/home/dev/live")
    assert run_cli("sync", str(tmp_path / "s"), PIWEB_HOST="devbox").returncode == 0
    cookie = login_cookie(alice)
    sid = pi_id(data)
    new_ids = [json.loads(line)["id"] for line in data.splitlines()[10:]]

    async def view() -> list[str]:
        frames: list[str] = []
        async with websockets.connect(
            server.url.replace("http://", "ws://") + f"/ws/sessions/{sid}/",
            additional_headers={"Cookie": f"sessionid={cookie}", "Origin": server.url},
        ) as ws:
            frames.append(str(await asyncio.wait_for(ws.recv(), 10)))  # the snapshot
            path.write_bytes(data)
            pushed = asyncio.create_task(asyncio.to_thread(run_cli, "sync", str(tmp_path / "s"), PIWEB_HOST="devbox"))
            async with asyncio.timeout(20):
                while not all(i in "".join(frames[1:]) for i in new_ids[-3:]):
                    frames.append(str(await ws.recv()))
            await pushed
        return frames

    frames = asyncio.run(view())
    assert new_ids[-1] not in frames[0]
    page = Client()
    page.force_login(alice)
    html = page.get(f"/sessions/{sid}/").content.decode()
    assert "Mirrored from" in html, html[html.find("session-meta") - 200 : html.find("session-meta") + 1500]
    assert "devbox" in html and str(path.resolve()) in html
