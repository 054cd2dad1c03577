"""Command fixtures: pi's session directory layout, filled with generated or hand-written files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


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
