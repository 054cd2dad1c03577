"""The harness's own promise: a console error on any page, htmx's included (an out-of-band swap whose
target is missing logs htmx:oobErrorNoTarget), is recorded, and the new_page fixture fails the test
on any it was not told to allow (tests/browser/harness.py ConsoleLog, conftest.new_page)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_console_errors_and_htmx_oob_errors_are_recorded(new_page, server):
    page = new_page()
    page.goto(server + "/accounts/login/")
    assert page.evaluate("typeof htmx") == "object"
    page.evaluate("console.error('harness check')")
    page.evaluate(
        """htmx.swap(document.body, '<div id="no-such-target" hx-swap-oob="true">x</div>', {swapStyle: 'none'})"""
    )
    page.evaluate("setTimeout(() => { throw new Error('uncaught check') }, 0)")
    page.wait_for_timeout(300)
    errors = page.console.unexpected()
    assert any("harness check" in e for e in errors), errors
    assert any("htmx:oobErrorNoTarget" in e for e in errors), errors
    assert any(e.startswith("uncaught:") and "uncaught check" in e for e in errors), errors
    for pattern in ("harness check", "htmx:oobErrorNoTarget", "uncaught check"):
        page.console.allow(pattern)
    assert page.console.unexpected() == []
