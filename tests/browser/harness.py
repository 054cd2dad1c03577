"""The browser tests' server and pages: piweb as deployed (daphne, PIWEB_DEBUG=false, the static
files collectstatic made, served by WhiteNoise) on the test database, and Chromium pages that
record every console error."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
VIEWPORTS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(static_root: Path, **extra: str) -> dict[str, str]:
    """The deployed settings on the test database (file SQLite or PostgreSQL) and this run's Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIWEB_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["PIWEB_SQLITE_PATH"] = str(db["NAME"])
    else:
        user = db.get("USER") or "postgres"
        host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
        env["PIWEB_DATABASE_URL"] = f"postgres://{user}@{host}:{port}/{db['NAME']}"
    for name in ("PIWEB_REDIS_URL", "PIWEB_CACHE_URL"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update(
        DJANGO_SETTINGS_MODULE="piweb.settings",
        PIWEB_DEBUG="false",
        PIWEB_SECRET_KEY=str(settings.SECRET_KEY),  # the tests' own: same sessions, same chain key
        PIWEB_ALLOWED_HOSTS="127.0.0.1",
        PIWEB_STATIC_ROOT=str(static_root),
        PIWEB_DEMO_DELAY="0.06",
        PIWEB_JANITOR="0",
        PIWEB_COMPACTION_KEEP_RECENT_TOKENS="40",
        PIWEB_OPENAI_API_KEY="",
        PIWEB_ANTHROPIC_API_KEY="",
        PIWEB_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def collect_static(static_root: Path) -> None:
    env = {**os.environ, "PIWEB_STATIC_ROOT": str(static_root)}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)


@dataclass
class Server:
    """daphne serving piweb.asgi:application (with Redis, a turn worker too). Their output goes to
    a file (a pipe nobody reads would fill up and stop them), shown if they fail to start."""

    env: dict[str, str]
    log: Path
    url: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> Server:
        port = free_port()
        commands = [[sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"]]
        if self.env.get("PIWEB_REDIS_URL"):
            commands.append([sys.executable, "manage.py", "turn_worker"])
        with self.log.open("ab") as out:
            for command in commands:
                self.procs.append(subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=out, stderr=out))
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if self.procs[0].poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"daphne did not start: {self.log.read_text()[-3000:]}") from None
                time.sleep(0.1)
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()


def make_user(username: str, password: str, **fields: Any) -> User:
    """A user who can sign in on the server: the tests hash passwords with MD5, which the deployed
    settings do not accept, so this one gets PBKDF2 (with few iterations: it is a test)."""
    user = User.objects.create(username=username, **fields)
    user.password = PBKDF2PasswordHasher().encode(password, "testsalt1234", iterations=1000)
    user.save(update_fields=["password"])
    return user


class ConsoleLog:
    """Console errors and uncaught exceptions of a page. A test that provokes an error (a 400 it
    expects, say) allows it first with allow(pattern)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.allowed: list[re.Pattern[str]] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text} ({message.location.get('url', '')})")

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]


def sign_in(page: Any, server: str, username: str, password: str) -> Any:
    page.goto(server + "/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(server + "/")
    return page


def wait_until(page: Any, expression: str, timeout: float = 20.0) -> Any:
    """Wait until a JavaScript expression is truthy on the page; its value. (Playwright's
    wait_for_function evaluates its predicate with eval inside the page, which the CSP refuses;
    page.evaluate goes through the debugger protocol instead.)"""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {expression}")
        time.sleep(0.05)


# What a phone user does on the session page (below 760 px: static/piweb/app.css, "phone and tablet"):
# tap a tab to see the tree or the conversation, open a message's or the session's ⋯ menu for their
# actions. On a wider screen all of it is on view and these do nothing.


def show_pane(page: Any, pane: str) -> None:
    """Tap the "Tree" or "Conversation" tab (pane "tree" or "conversation") if the page shows tabs."""
    tab = page.locator(f"[data-pane-tab={pane}]")
    if tab.is_visible() and tab.get_attribute("aria-selected") != "true":
        tab.click()


def open_menu(page: Any, toggle: str) -> None:
    """Open a ⋯ menu (toggle: its button's selector) if the page shows it closed."""
    button = page.locator(toggle)
    if button.is_visible() and button.get_attribute("aria-expanded") != "true":
        button.click()


def message_actions(page: Any, message: str) -> None:
    """A message's actions (message: its selector, "#e-<id>"): in the conversation, its menu open."""
    show_pane(page, "conversation")
    open_menu(page, f"{message} [data-acts-toggle]")


def session_actions(page: Any) -> None:
    """The session's actions (export, share, delete): its menu open."""
    open_menu(page, "[data-head-toggle]")
