from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_imports_the_core_without_django():
    code = (
        "import sys; import sessions_app.core.tree, sessions_app.core.context, sessions_app.core.piformat; "
        "import sessions_app.core.jsjson, sessions_app.core.compaction, sessions_app.core.chain; "
        "import sessions_app.store.entry_insert, sessions_app.store.importing.gcpause; "
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'"
    )
    env = {"PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
