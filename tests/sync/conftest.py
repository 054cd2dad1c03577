"""Real servers and real files for the `piweb` CLI: pi's folder layout in a temporary directory,
daphne on a port that survives a restart, and the CLI run as its own process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessions_app.access.api_tokens import api_token_create
from tests.servers import ROOT, Processes, free_port, server_env


class Server:
    """One daphne on a fixed port: stop() and start() again is a server restart."""

    def __init__(self, processes: Processes, **env: str) -> None:
        self.processes = processes
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "piweb.asgi:application"]
        self.proc = self.processes.start(command, server_env(**self.env))
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"daphne did not start: {self.processes.log.read_text()[-3000:]}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # as a crash or a restart would: no goodbye
        self.proc.wait()

    def state(self, token: str, pi_id: str) -> dict[str, Any] | None:
        request = urllib.request.Request(f"{self.url}/api/sync/{pi_id}", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as failed:
            if failed.code == 404:
                return None
            raise


@pytest.fixture
def server(processes: Processes) -> Server:
    running = Server(processes)
    running.start()
    return running


def cli_env(server: Server, token: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIWEB_", "DJANGO_"))}
    # (the test run's own PYTHONPATH too: with watchdog on it, --watch uses inotify rather than polling)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, PIWEB_SERVER=server.url, PIWEB_TOKEN=token, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


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


class Watcher:
    """`piweb sync --watch` as its own process; stop() is Ctrl+C."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=15)
        return self.log.read_text()


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


def pi_file(root: Path, data: bytes, cwd: str = "/home/dev/projects/demo") -> Path:
    """data written where pi writes it: <root>/<cwd-encoded>/<timestamp>_<id>.jsonl."""
    header = json.loads(data.split(b"\n", 1)[0])
    folder = root / ("--" + cwd.lstrip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True, exist_ok=True)
    stamp = header["timestamp"].replace(":", "-").replace(".", "-")
    path = folder / f"{stamp}_{header['id']}.jsonl"
    path.write_bytes(data)
    return path


def wait_for(check: Callable[[], bool], timeout: float = 20) -> float:
    """Seconds until check() held (AssertionError after timeout)."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise AssertionError("timed out")
        time.sleep(0.02)
    return time.monotonic() - start
