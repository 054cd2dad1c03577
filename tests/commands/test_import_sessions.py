"""manage.py import_sessions PATH... --user NAME [--partial]."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import Entry, Session
from tests.builders import entry, header, jsonl, session_id_of

pytestmark = pytest.mark.django_db

HEADER = header("hand-made-1")


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_sessions", *args, "--no-progress", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_import_a_directory_in_pis_layout(alice, pi_sessions, generated):
    files = {
        pi_sessions("/home/alice/app", "2026-01-05T09-00-00-000Z_a.jsonl", generated(entries=50, seed=1)),
        pi_sessions("/home/alice/app", "2026-01-06T09-00-00-000Z_b.jsonl", generated(entries=20, seed=2)),
        pi_sessions("/home/alice/lib", "2026-01-07T09-00-00-000Z_c.jsonl", generated(entries=30, seed=3, labels=3)),
    }
    (pi_sessions.root / "--home-alice-lib--" / "notes.txt").write_text("not a session")
    output = run(str(pi_sessions.root), "--user", "alice")
    assert "3 files: 3 new, 0 grown, 0 unchanged, 0 rejected" in output
    assert Session.objects.filter(owner=alice).count() == 3
    for path in files:
        session = Session.objects.get(public_id=session_id_of(path.read_bytes()))
        assert session.source_path == str(path.resolve())
        assert session.entries.count() == len(path.read_bytes().splitlines()) - 1
    assert Entry.objects.count() == 100


def test_import_single_files(alice, tmp_path, generated):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(generated(entries=10, seed=4))
    two.write_bytes(generated(entries=12, seed=5))
    assert "2 files: 2 new" in run(str(one), str(two), "--user", "alice")
    assert Entry.objects.count() == 22


def test_rerun_imports_nothing_new(alice, pi_sessions, generated):
    pi_sessions("/p", "a.jsonl", generated(entries=25, seed=6))
    pi_sessions("/p", "b.jsonl", generated(entries=15, seed=7))
    run(str(pi_sessions.root), "--user", "alice")
    rows = list(Entry.objects.order_by("pk").values_list("pk", "entry_id"))
    output = run(str(pi_sessions.root), "--user", "alice")
    assert "2 files: 0 new, 0 grown, 2 unchanged, 0 rejected" in output
    assert list(Entry.objects.order_by("pk").values_list("pk", "entry_id")) == rows


def test_grown_file_appends_only_new_lines(alice, pi_sessions):
    path = pi_sessions("/p", "s.jsonl", jsonl(HEADER, entry("e1", None, text="one"), entry("e2", "e1", text="two")))
    run(str(path), "--user", "alice")
    first_rows = list(Entry.objects.order_by("seq").values_list("pk", "entry_id"))
    with path.open("ab") as f:
        f.write(jsonl(entry("e3", "e2", text="three"), entry("e4", "e1", text="branch")))
    output = run(str(pi_sessions.root), "--user", "alice")
    assert "1 files: 0 new, 1 grown, 0 unchanged, 0 rejected" in output
    rows = list(Entry.objects.order_by("seq").values_list("pk", "entry_id"))
    assert rows[:2] == first_rows
    assert [e for _, e in rows] == ["e1", "e2", "e3", "e4"]
    session = Session.objects.get(public_id="hand-made-1")
    assert session.leaf_id == "e4"
    assert session.source_bytes == path.stat().st_size


def test_grown_real_size_file(alice, tmp_path, generated):
    full = generated(entries=300, seed=8, compactions=2, labels=5)
    lines = full.splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:151]))
    run(str(path), "--user", "alice")
    assert Entry.objects.count() == 150
    path.write_bytes(full)
    assert "1 grown" in run(str(path), "--user", "alice")
    assert Entry.objects.count() == 300
    assert Session.objects.get().leaf_id == json.loads(lines[-1])["id"]


def test_bad_file_is_reported_with_line_and_fails(alice, pi_sessions, generated, capsys):
    good = pi_sessions("/p", "good.jsonl", generated(entries=20, seed=9))
    bad = pi_sessions(
        "/p", "bad.jsonl", jsonl(HEADER, entry("e1", None, text="ok"), "{broken", entry("e3", "nope", text="orphan"))
    )
    with pytest.raises(CommandError, match=r"2 files: 1 new, 0 grown, 0 unchanged, 1 rejected"):
        run(str(pi_sessions.root), "--user", "alice")
    printed = capsys.readouterr()
    report = printed.out + printed.err
    assert f"{bad}:3:" in report
    assert f"{bad}:4:" in report
    assert "nope" in report
    assert str(good) not in report
    assert Session.objects.get().public_id == session_id_of(good.read_bytes())
    assert not Entry.objects.filter(entry_id="e1").exists()


def test_partial_imports_the_valid_part(alice, pi_sessions, capsys):
    bad = pi_sessions(
        "/p", "bad.jsonl", jsonl(HEADER, entry("e1", None, text="ok"), "{broken", entry("e3", "nope", text="orphan"))
    )
    output = run(str(bad), "--user", "alice", "--partial")
    assert "1 files: 1 new, 0 grown, 0 unchanged, 0 rejected" in output
    printed = capsys.readouterr()
    assert f"{bad}:3: skipped" in printed.out + printed.err
    assert f"{bad}:4: skipped" in printed.out + printed.err
    session = Session.objects.get(public_id="hand-made-1")
    assert list(session.entries.values_list("entry_id", flat=True)) == ["e1"]
    assert [p["line"] for p in session.import_report] == [3, 4]


def test_user_is_required(pi_sessions):
    with pytest.raises(CommandError, match="--user"):
        call_command("import_sessions", str(pi_sessions.root))


def test_unknown_user(pi_sessions):
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run(str(pi_sessions.root), "--user", "nobody")


def test_missing_path(alice, tmp_path):
    with pytest.raises(CommandError, match="no such file or directory"):
        run(str(tmp_path / "missing"), "--user", "alice")
    assert Session.objects.count() == 0


def test_another_users_session_id_is_imported_under_a_new_id(alice, bob, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(HEADER, entry("e1", None, text="mine")))
    run(str(path), "--user", "alice")
    run(str(path), "--user", "bob")
    assert Session.objects.get(public_id="hand-made-1").owner == alice
    bobs = Session.objects.get(owner=bob)
    assert bobs.source_id == "hand-made-1" and bobs.public_id != "hand-made-1"
