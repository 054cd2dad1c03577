"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run inside one.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
SHOTS = Path("/tmp/shots")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        yield b
        b.close()


@pytest.fixture
def login(browser, live_server, django_user_model):
    """login(theme="light") -> a page signed in as alice (through the real sign-in form)."""
    django_user_model.objects.create_user("alice", password="alice-pw")
    contexts = []

    def make(theme: str = "light"):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme=theme, accept_downloads=True)
        contexts.append(ctx)
        page = ctx.new_page()
        page.dialogs = []
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.accept()))
        page.goto(live_server.url + "/accounts/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-pw")
        page.click("button[type=submit]")
        page.wait_for_url(live_server.url + "/")
        return page

    yield make
    for ctx in contexts:
        ctx.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.fixture(autouse=True)
def _sessions_deleted_after(transactional_db):
    """The flush ending a transactional test is a plain DELETE, which the append-only trigger
    refuses; the delete service is the way."""
    yield
    from sessions_app import services
    from sessions_app.models import Session

    for leftover in Session.objects.all():
        services.session_delete(session=leftover)
