"""Real servers and real files for the `piweb` CLI: pi's folder layout in a temporary directory,
daphne on a port that survives a restart, and the CLI run as its own process. (The fixtures that
start them are in conftest.py.)"""

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def cli_env(server: Server, token: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIWEB_", "DJANGO_"))}
    # (the test run's own PYTHONPATH too: with watchdog on it, --watch uses inotify rather than polling)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, PIWEB_SERVER=server.url, PIWEB_TOKEN=token, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


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


def pi_id(data: bytes) -> str:
    """The session id in a file's header line."""
    return str(json.loads(data.split(b"\n", 1)[0])["id"])
