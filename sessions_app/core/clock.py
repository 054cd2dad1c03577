"""pi's two clocks: entry timestamps as new Date().toISOString(), message timestamps as Date.now()."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_iso() -> str:
    """new Date().toISOString(): UTC, milliseconds, Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_ms() -> int:
    """Date.now(): milliseconds since the epoch."""
    return int(time.time() * 1000)
