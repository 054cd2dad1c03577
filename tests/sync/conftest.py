"""Fixtures for the `piweb` CLI tests: a daphne server, API tokens, the CLI run once or watching
(the helpers they use are in tests/sync/harness.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sessions_app.access.api_tokens import api_token_create
from tests.servers import Processes
from tests.sync.harness import Server, Watcher, cli_env


@pytest.fixture
def server(processes: Processes) -> Server:
    running = Server(processes)
    running.start()
    return running


@pytest.fixture
def push_token(alice) -> str:
    return api_token_create(user=alice, scope="push")[1]


@pytest.fixture
def read_token(alice) -> str:
    return api_token_create(user=alice, scope="read")[1]


@pytest.fixture
def run_cli(server: Server, push_token: str, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str, token: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "piweb.cli", *args]
        environ = cli_env(server, token or push_token, HOME=str(tmp_path), **env)
        return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120, cwd=tmp_path)

    return run


@pytest.fixture
def watchers(tmp_path: Path) -> Iterator[Callable[..., Watcher]]:
    started: list[Watcher] = []

    def start(server: Server, token: str, *dirs: Path, polling: bool = False, **env: str) -> Watcher:
        command = [sys.executable, "-m", "piweb.cli", "sync", "--watch", *map(str, dirs)]
        if polling:
            command.append("--no-watchdog")  # the fallback, whether watchdog is installed or not
        watcher = Watcher(command, cli_env(server, token, **env), tmp_path / f"watch{len(started)}.log")
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
            watcher.proc.wait()
