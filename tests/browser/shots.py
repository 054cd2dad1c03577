"""Screenshots of browser tests, for a person to look at (/tmp/shots), named with the viewport."""

from __future__ import annotations

from pathlib import Path

SHOTS = Path("/tmp/shots")


def shot(page, name: str, *, full_page: bool = False) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or {"width": 0, "height": 0}
    page.screenshot(path=str(SHOTS / f"{name}-{size['width']}x{size['height']}.png"), full_page=full_page)
