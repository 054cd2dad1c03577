"""Command fixtures: pi's session directory layout, filled with generated or hand-written files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BASELINE_SRC


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., bytes]:
    """make(entries, seed, **options) -> a pi v3 session file from gen_session.py (cached)."""
    cache: dict[tuple[Any, ...], bytes] = {}
    folder = tmp_path_factory.mktemp("generated")

    def make(entries: int = 40, seed: int = 1, **options: Any) -> bytes:
        key = (entries, seed, *sorted(options.items()))
        if key not in cache:
            out = folder / f"session-{len(cache)}.jsonl"
            args = [sys.executable, str(BASELINE_SRC / "gen_session.py"), "--entries", str(entries)]
            args += ["--seed", str(seed), "--out", str(out)]
            for name, value in options.items():
                args += [f"--{name.replace('_', '-')}", str(value)]
            subprocess.run(args, check=True, capture_output=True)
            cache[key] = out.read_bytes()
        return cache[key]

    return make


def session_id_of(data: bytes) -> str:
    return str(json.loads(data.split(b"\n", 1)[0])["id"])


@pytest.fixture
def pi_sessions(tmp_path: Path) -> Callable[[str, str, bytes], Path]:
    """put(cwd, name, data): write a file where pi keeps it, sessions/--<cwd with / as ->--/name."""
    root = tmp_path / "sessions"
    root.mkdir()

    def put(cwd: str, name: str, data: bytes) -> Path:
        folder = root / ("--" + cwd.strip("/").replace("/", "-") + "--")
        folder.mkdir(exist_ok=True)
        path = folder / name
        path.write_bytes(data)
        return path

    put.root = root  # type: ignore[attr-defined]
    return put
