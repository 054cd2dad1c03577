"""Browser tests: Playwright's sync API driving Debian's Chromium against pytest-django's live server.

Without /usr/bin/chromium (or PIWEB_CHROMIUM) or the playwright package they are skipped, with the
reason (tests/needs.py); .ci/run makes that a failure."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.needs import CHROMIUM

ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
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
