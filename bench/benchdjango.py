"""Django for a bench script, set up as deployed (debug off, any host name) and migrated: on
PIWEB_DATABASE_URL when it is set, else on the SQLite file `db` (a fresh one unless keep); and a
daphne serving a checkout of piweb.

Only the standard library at the top: scripts that time an older checkout load this file from
here (bench/ on sys.path, `import benchdjango`) and the app from the checkout."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
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


@contextlib.contextmanager
def daphne(
    code: Path | str = ROOT, env: Mapping[str, str] | None = None, log: Path | None = None
) -> Iterator[tuple[int, int]]:
    """A daphne serving piweb.asgi:application from the checkout `code` (env: its environment,
    else this process's) on a free port, once it accepts connections: (port, pid). Its output is
    appended to log, else dropped. Stopped on leaving."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"]
    with log.open("ab") if log else contextlib.nullcontext(subprocess.DEVNULL) as out:
        server = subprocess.Popen(command, cwd=code, env=None if env is None else dict(env), stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"daphne did not start (its output: {log or 'dropped'})") from None
                time.sleep(0.05)
        yield port, server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)
