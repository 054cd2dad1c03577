"""The browser tests' server and pages: piweb as deployed (daphne, PIWEB_DEBUG=false, the static
files collectstatic made, served by WhiteNoise) on the test database, and Chromium pages that
record every console error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User

from tests import servers
from tests.servers import ROOT

VIEWPORTS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


def server_env(static_root: Path, **extra: str) -> dict[str, str]:
    """tests.servers' deployed settings, with the collected static files and a visible demo stream."""
    env = servers.server_env(
        PIWEB_STATIC_ROOT=str(static_root), PIWEB_DEMO_DELAY="0.06", PIWEB_COMPACTION_KEEP_RECENT_TOKENS="40"
    )
    env.update(extra)
    return env


def collect_static(static_root: Path) -> None:
    env = {**os.environ, "PIWEB_STATIC_ROOT": str(static_root)}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)


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


def wait_settled(page: Any) -> None:
    """Wait until htmx has settled its swaps: it wires up swapped-in content (a form's triggers) only
    then, a settle delay after the new content shows, so typing into it earlier goes unheard."""
    wait_until(page, "!document.querySelector('.htmx-added, .htmx-settling, .htmx-swapping')")


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
