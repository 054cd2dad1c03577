"""The pure modules import without Django: every module of core/ and llm/ (but the registry, which
reads the settings), and the import's row building, which runs in a forked child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "sessions_app"
ALSO_PURE = ["sessions_app.store.rows", "sessions_app.store.importing.worker", "sessions_app.store.importing.bulkwrite"]


def pure_modules() -> list[str]:
    found = []
    for folder in ("core", "llm"):
        for path in sorted((APP / folder).glob("*.py")):
            if path.stem not in ("__init__", "registry"):
                found.append(f"sessions_app.{folder}.{path.stem}")
    return found + ALSO_PURE


def test_the_list_covers_every_core_module():
    assert "sessions_app.core.intake" in pure_modules() and "sessions_app.llm.base" in pure_modules()
    assert len([m for m in pure_modules() if ".core." in m]) == len(list((APP / "core").glob("*.py"))) - 1


def test_it_imports_the_pure_modules_without_django():
    code = (
        f"import sys, importlib; [importlib.import_module(m) for m in {pure_modules()!r}]; "
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'"
    )
    env = {"PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
