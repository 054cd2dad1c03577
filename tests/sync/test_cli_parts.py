"""The CLI's own pieces, without a server: pi's layout, whole lines, batches, where settings come from."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from piweb.cli import config, files, sync


def test_cwd_dir_name_is_pis():
    assert files.cwd_dir_name("/home/u/proj") == "--home-u-proj--"
    assert files.cwd_dir_name("C:\\Users\\dev\\proj") == "--C--Users-dev-proj--"
    assert files.cwd_dir_name("\\\\server\\share") == "---server-share--"


def test_a_torn_last_line_waits():
    assert files.complete_lines(b'{"a":1}\n{"b":') == b'{"a":1}\n'
    assert files.complete_lines(b'{"a":1') == b""
    assert files.header_of(b'{"type":"session","id":"x"') is None  # the header itself still torn
    assert files.header_of(b'\n{"type":"session","id":"x"}\n') == {"type": "session", "id": "x"}
    assert files.header_of(b'{"type":"message","id":"x"}\n') is None


def test_batches_are_whole_lines_within_the_size(monkeypatch):
    monkeypatch.setattr(sync, "BATCH_BYTES", 10)
    data = b"h\n" + b"aaaa\n" + b"bbbb\n" + b"c" * 20 + b"\n" + b"d\n"
    batches = sync._batches(data, 2)
    assert b"".join(batches) == data[2:]
    assert all(b.endswith(b"\n") for b in batches)
    assert batches == [b"aaaa\nbbbb\n", b"c" * 20 + b"\n", b"d\n"]


def test_exclude_globs_match_the_path_under_the_root_or_the_name(tmp_path):
    root = tmp_path / "sessions"
    for name in ("--a--/1_x.jsonl", "--b--/2_y.jsonl", "--b--/notes.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    found = [p.relative_to(root).as_posix() for _, p in files.session_files([root], ["--b--/*"])]
    assert found == ["--a--/1_x.jsonl"]
    assert [p.name for _, p in files.session_files([root], ["1_*"])] == ["2_y.jsonl"]


def test_flags_then_environment_then_login(tmp_path, monkeypatch):
    monkeypatch.setenv("PIWEB_CONFIG", str(tmp_path / "c" / "config.json"))
    monkeypatch.delenv("PIWEB_SERVER", raising=False)
    monkeypatch.delenv("PIWEB_TOKEN", raising=False)
    with pytest.raises(config.ConfigError, match="no server"):
        config.resolve(None, None)
    path = config.save(config.Remote("http://saved", "t-saved"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.resolve(None, None) == config.Remote("http://saved", "t-saved")
    monkeypatch.setenv("PIWEB_SERVER", "http://env/")
    assert config.resolve(None, None) == config.Remote("http://env", "t-saved")
    assert config.resolve("http://flag", "t-flag") == config.Remote("http://flag", "t-flag")


def test_an_existing_config_file_becomes_private(tmp_path, monkeypatch):
    target = tmp_path / "config.json"
    target.write_text("{}")
    target.chmod(0o644)
    monkeypatch.setenv("PIWEB_CONFIG", str(target))
    config.save(config.Remote("http://s", "t"))
    assert stat.S_IMODE(Path(target).stat().st_mode) == 0o600
