"""Browser tests: Playwright's sync API driving Debian's Chromium against piweb as deployed
(tests/browser/harness.py), at a desktop and a phone size; any console error fails the test.

Without /usr/bin/chromium (or PIWEB_CHROMIUM) or the playwright package they are skipped, with the
reason (tests/needs.py); .ci/run makes that a failure."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from sessions_app.models import Session
from sessions_app.store import services
from tests.browser.harness import ARGS, VIEWPORTS, ConsoleLog, collect_static, make_user, server_env
from tests.browser.harness import sign_in as form_sign_in
from tests.needs import CHROMIUM
from tests.servers import Processes


@pytest.fixture(scope="session")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    collect_static(root)
    return root


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, static_root, tmp_path_factory) -> Iterator[str]:
    """The URL of a daphne serving piweb with PIWEB_DEBUG=false on the test database."""
    if os.environ.get("PIWEB_REDIS_URL"):
        import redis

        redis.Redis.from_url(os.environ["PIWEB_REDIS_URL"]).flushdb()
    running = Processes(tmp_path_factory.mktemp("server") / "server.log")
    with django_db_blocker.unblock():
        env = server_env(static_root)
        url = running.daphne(env)
        if env.get("PIWEB_REDIS_URL"):
            running.worker(env)
    try:
        yield url
    finally:
        running.stop()
        if running.errors():  # shown with the failures, for whoever reads them
            print(f"--- {running.log}:\n{running.log.read_text(errors='replace')[-6000:]}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Module-scoped: Playwright's sync API runs an event loop in this thread until it stops, and
    the async tests that run after these need the thread back."""
    from playwright.sync_api import sync_playwright

    # Django's ORM refuses to run inside a running event loop; here the loop is Playwright's.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            yield b
            b.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_page(browser, viewport) -> Iterator[Callable[..., Any]]:
    """new_page(theme="light") -> a page at this test's viewport; its console errors fail the test."""
    made: list[tuple[Any, ConsoleLog]] = []

    def make(theme: str = "light", **options: Any) -> Any:
        ctx = browser.new_context(viewport=VIEWPORTS[viewport], color_scheme=theme, accept_downloads=True, **options)
        page = ctx.new_page()
        page.set_default_timeout(20_000)  # waits on streams and imports, on 2 shared cores
        page.console = ConsoleLog(page)
        page.dialogs = []
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.accept()))
        made.append((ctx, page.console))
        return page

    yield make
    unexpected = [error for _, log in made for error in log.unexpected()]
    for ctx, _ in made:
        ctx.close()
    assert unexpected == [], unexpected


@pytest.fixture
def login(new_page, server, db) -> Callable[..., Any]:
    """login(theme="light", username="alice") -> a page signed in through the real sign-in form.
    alice exists from the start; another user is made if missing (one made beforehand needs
    harness.make_user and the password <name>-pw)."""
    make_user("alice", "alice-pw")
    passwords = {"alice": "alice-pw"}

    def make(theme: str = "light", username: str = "alice") -> Any:
        if username not in passwords:
            passwords[username] = f"{username}-pw"
            if not User.objects.filter(username=username).exists():
                make_user(username, passwords[username])
        return form_sign_in(new_page(theme), server, username, passwords[username])

    return make


@pytest.fixture(autouse=True)
def _sessions_deleted_after(db):
    """Transactional tests end with a flush (a plain DELETE on SQLite) that the append-only
    trigger refuses; delete sessions through the service instead."""
    yield
    _server_idle()
    for leftover in Session.objects.all():
        services.session_delete(session=leftover)
    _server_idle()  # (again, just before the flush: a late request may have begun meanwhile)


def _server_idle(timeout: float = 10.0, quiet: float = 0.3) -> None:
    """PostgreSQL: wait until the server's connections have had no statement or transaction open
    for `quiet` seconds. A request still running when the pages closed (a socket's disconnect, the
    last htmx swap) holds table locks in its own order; the flush's TRUNCATE takes them in another,
    and the two deadlock. One idle moment is not enough: a socket's close can reach the server
    just after it (CI saw the deadlock once with a single look)."""
    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + timeout
    idle_since: float | None = None
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'"
            )
            busy = cursor.fetchone()[0] > 0
        now = time.monotonic()
        if busy:
            idle_since = None
        elif idle_since is None:
            idle_since = now
        elif now - idle_since >= quiet:
            return
        time.sleep(0.05)
