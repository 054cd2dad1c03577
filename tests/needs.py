"""Tests that need more than Python: a pytest plugin (tests/conftest.py takes its hooks).

- `oracle` tests (everything in tests/oracle/) run the real pi: Node >= 20.6 and npm;
- `browser` tests (everything in tests/browser/) drive Debian's Chromium through Playwright.

Where that is missing they are skipped, with the reason. With PIWEB_REQUIRE_ALL_TESTS=1 (.ci/run
sets it) they fail instead, with the same reason: CI never passes without them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.oracle import install

REQUIRE_ALL = "PIWEB_REQUIRE_ALL_TESTS"
CHROMIUM = Path(os.environ.get("PIWEB_CHROMIUM", "/usr/bin/chromium"))
HERE = Path(__file__).resolve().parent


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing: the browser tests drive Debian's Chromium (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing: the browser tests drive Chromium with it (pip install -e '.[dev]')"
    return None


MISSING: dict[str, Callable[[], str | None]] = {"oracle": install.why_not, "browser": browser_missing}
FOLDERS = {"oracle": HERE / "oracle", "browser": HERE / "browser"}


def skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE_ALL, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_ALL} is set: this test may not be skipped)", pytrace=False)
    pytest.skip(reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of tests/oracle/ is an oracle test, every test of tests/browser/ a browser test."""
    for item in items:
        for marker, folder in FOLDERS.items():
            if item.path.is_relative_to(folder) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture: skip (or fail) a test whose tools are missing."""
    for marker, missing in MISSING.items():
        if item.get_closest_marker(marker) is not None:
            reason = missing()
            if reason:
                skip_or_fail(reason)
