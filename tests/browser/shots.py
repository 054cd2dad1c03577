"""Screenshots of browser tests, for a person to look at (/tmp/shots)."""

from __future__ import annotations

from pathlib import Path

SHOTS = Path("/tmp/shots")


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
