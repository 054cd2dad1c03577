"""Where the tests find their files: all of them inside this repository."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PI_FIXTURES = ROOT / "tests" / "fixtures" / "pi"  # pi's own files (pi-mono, MIT: see NOTICE.md there)
LARGE_SESSION = PI_FIXTURES / "large-session.jsonl"  # pi's real v1 session, 1,018 entries
HANDMADE = ROOT / "tests" / "fixtures" / "handmade"  # piweb's hand-written files, one per format case
PI_PACKAGE = ROOT / "tests" / "oracle" / "pi"  # the pinned npm package of the real pi, and our node scripts
