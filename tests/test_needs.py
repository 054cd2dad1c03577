"""tests/needs.py: an oracle or browser test whose tools are missing is skipped with the reason, and
fails with it under PIWEB_REQUIRE_ALL_TESTS=1 (as in .ci/run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

TESTS = """
import pytest

@pytest.mark.oracle
def test_runs_pi():
    pass

@pytest.mark.browser
def test_drives_chromium():
    pass

def test_needs_nothing():
    pass
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A pytest of its own on TESTS with tests/needs.py as its plugin, no node on PATH, no Chromium."""
    (tmp_path / "test_tiny.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    oracle: x\n    browser: x\n")
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if k not in ("PIWEB_REQUIRE_ALL_TESTS", "PIWEB_PI_DIR")}
    environ.update(
        PATH=str(empty), PYTHONPATH=str(ROOT), COLUMNS="400", PIWEB_CHROMIUM=str(tmp_path / "no-chromium"), **env
    )
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # none of the installed plugins (django, asyncio, ...)
    plugins = ("tests.needs", "no:cacheprovider")
    args = [sys.executable, "-m", "pytest", *(a for plugin in plugins for a in ("-p", plugin)), "-rsE", "test_tiny.py"]
    return subprocess.run(args, cwd=tmp_path, env=environ, capture_output=True, text=True)


NODE = "node is not on PATH: the real pi (@mariozechner/pi-coding-agent, pinned in tests/oracle/pi/) needs Node >= 20.6"


@pytest.mark.parametrize("require", ["", "0"])
def test_missing_tools_skip_the_tests_that_need_them(tmp_path, require):
    run = _run(tmp_path, PIWEB_REQUIRE_ALL_TESTS=require)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 2 skipped" in run.stdout
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED [1] ")]
    chromium = tmp_path / "no-chromium"
    assert [line.split(": ", 1)[1] for line in skipped] == [
        f"{NODE} and npm",
        f"{chromium} is missing: the browser tests drive Debian's Chromium (apt-get install chromium)",
    ]


def test_with_all_tests_required_they_fail_instead(tmp_path):
    run = _run(tmp_path, PIWEB_REQUIRE_ALL_TESTS="1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed, 2 errors" in run.stdout
    assert f"ERROR test_tiny.py::test_runs_pi - Failed: {NODE} and npm" in run.stdout
    assert "(PIWEB_REQUIRE_ALL_TESTS is set: this test may not be skipped)" in run.stdout
    assert "ERROR test_tiny.py::test_drives_chromium - Failed: " in run.stdout


def test_a_node_older_than_pi_needs_is_missing_too(tmp_path):
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    node.write_text("#!/bin/sh\necho v20.5.1\n")
    node.chmod(0o755)
    run = _run(tmp_path)
    assert "1 passed, 2 skipped" in run.stdout
    reason = (
        "node is v20.5.1: the real pi (@mariozechner/pi-coding-agent, pinned in tests/oracle/pi/) needs Node >= 20.6"
    )
    assert f": {reason}\n" in run.stdout
