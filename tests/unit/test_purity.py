from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_imports_the_core_without_django():
    code = (
        "import sys; import sessions_app.tree, sessions_app.context, sessions_app.piformat, sessions_app.jsjson; "
        "import sessions_app.compaction, sessions_app.chain, sessions_app.entry_insert, sessions_app.gcpause; "
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'"
    )
    env = {"PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
