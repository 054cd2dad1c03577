"""piweb as deployed, for tests that need real processes: daphne servers and turn workers on the
test database, and an HTTP client that signs in with a session cookie and passes CSRF."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils.crypto import get_random_string

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(**overrides: str) -> dict[str, str]:
    """The deployed settings (debug off) on the test database (file SQLite or PostgreSQL), with
    this run's Redis and cache if it has them; overrides last."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["PIWEB_SQLITE_PATH"] = str(db["NAME"])
    else:
        user, host, port = db.get("USER") or "postgres", db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
        env["PIWEB_DATABASE_URL"] = f"postgres://{user}@{host}:{port}/{db['NAME']}"
    for name in ("PIWEB_REDIS_URL", "PIWEB_CACHE_URL"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update(
        DJANGO_SETTINGS_MODULE="piweb.settings",
        PIWEB_DEBUG="false",
        PIWEB_SECRET_KEY=str(settings.SECRET_KEY),  # the tests' own: same sessions, same chain key
        PIWEB_ALLOWED_HOSTS="127.0.0.1",
        PIWEB_JANITOR="0",
        PIWEB_OPENAI_API_KEY="",
        PIWEB_ANTHROPIC_API_KEY="",
        PIWEB_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


class Processes:
    """daphne servers and turn workers, their output in one log file (a pipe nobody reads would
    fill up and stop them), all stopped by stop()."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as out:
            proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        self.procs.append(proc)
        return proc

    def daphne(self, env: dict[str, str]) -> str:
        """A daphne serving piweb.asgi:application; its base URL once it accepts connections."""
        port = free_port()
        proc = self.start(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"], env
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return f"http://127.0.0.1:{port}"
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"daphne did not start: {self.log.read_text()[-3000:]}") from None
                time.sleep(0.1)

    def worker(self, env: dict[str, str]) -> subprocess.Popen[bytes]:
        return self.start([sys.executable, "manage.py", "turn_worker"], env)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()

    def errors(self) -> list[str]:
        """The log's lines that tell of an error."""
        return [ln for ln in self.log.read_text(errors="replace").splitlines() if "Error" in ln or "Traceback" in ln]


def login_cookie(user: object) -> str:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return str(client.cookies["sessionid"].value)


def post_form(base: str, path: str, data: dict[str, str], sessionid: str, timeout: float = 60) -> tuple[int, str]:
    """POST a form as the page's htmx does (session cookie, CSRF token); (status, body)."""
    token = get_random_string(32)
    request = urllib.request.Request(
        base + path,
        data=urllib.parse.urlencode(data).encode(),
        headers={
            "Cookie": f"sessionid={sessionid}; csrftoken={token}",
            "X-CSRFToken": token,
            "Origin": base,
            "HX-Request": "true",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")
