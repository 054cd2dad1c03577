"""Django for a bench script, set up as deployed (debug off, any host name) and migrated: on
PIWEB_DATABASE_URL when it is set, else on the SQLite file `db` (a fresh one unless keep)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(db: str, *, keep: bool = False) -> None:
    if not os.environ.get("PIWEB_DATABASE_URL"):
        os.environ["PIWEB_SQLITE_PATH"] = db
        if not keep:
            for suffix in ("", "-wal", "-shm"):
                Path(db + suffix).unlink(missing_ok=True)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["*"]
    settings.DEBUG = False
    call_command("migrate", verbosity=0)
