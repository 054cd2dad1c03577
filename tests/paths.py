"""Where the tests find their files."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "pi"
BASELINE_SRC = SHARED / "bench" / "pi-baseline"
