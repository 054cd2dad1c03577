"""The real pi, installed from this repository: tests/oracle/pi/ pins the npm package
@mariozechner/pi-coding-agent (package.json and its package-lock.json); `npm ci` installs it into
var/pi/ (not in git) once, and again when either file changes. The tests and the benchmarks share
that install.

Node resolves a script's packages from the script's own folder upwards, so our scripts (the oracle's
in tests/oracle/pi/, the benchmark's in bench/) run from a copy placed inside the install.

PIWEB_PI_DIR names a folder where the package is installed already: then nothing is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from tests.paths import PI_PACKAGE, ROOT

PACKAGE_NAME = "@mariozechner/pi-coding-agent"
NODE_MIN = (20, 6)  # pi 0.73.1's "engines"
INSTALL = ROOT / "var" / "pi"
MANIFESTS = ("package.json", "package-lock.json")


@cache
def why_not() -> str | None:
    """Why the real pi cannot run on this machine (node or npm missing, node too old), or None."""
    needs = f"the real pi ({PACKAGE_NAME}, pinned in tests/oracle/pi/) needs Node >= {NODE_MIN[0]}.{NODE_MIN[1]}"
    node = shutil.which("node")
    if node is None:
        return f"node is not on PATH: {needs} and npm"
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return f"`node --version` failed ({error}): {needs}"
    found = re.match(r"v(\d+)\.(\d+)", version.strip())
    if found is None or (int(found[1]), int(found[2])) < NODE_MIN:
        return f"node is {version.strip() or '?'}: {needs}"
    if not os.environ.get("PIWEB_PI_DIR") and shutil.which("npm") is None:
        return f"npm is not on PATH: {needs} and npm to install it"
    return None


def _wanted() -> str:
    digest = hashlib.sha256()
    for name in MANIFESTS:
        digest.update((PI_PACKAGE / name).read_bytes())
    return digest.hexdigest()


def install() -> Path:
    """The folder where pi is installed: var/pi/, made or brought up to date with `npm ci` (under a
    file lock: parallel test processes wait for one install)."""
    configured = os.environ.get("PIWEB_PI_DIR")
    if configured:
        target = Path(configured)
        if not (target / "node_modules" / PACKAGE_NAME).is_dir():
            raise RuntimeError(f"PIWEB_PI_DIR={configured}: no node_modules/{PACKAGE_NAME} there")
        return target
    target = INSTALL
    stamp = target / ".installed"  # the digest of the manifests it was installed from, written last
    wanted = _wanted()

    def ready() -> bool:
        return stamp.is_file() and stamp.read_text() == wanted and (target / "node_modules" / PACKAGE_NAME).is_dir()

    if ready():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".pi-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready():
            stamp.unlink(missing_ok=True)
            for name in MANIFESTS:
                shutil.copyfile(PI_PACKAGE / name, target / name)
            npm = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
            subprocess.run(npm, cwd=target, check=True, stdout=subprocess.DEVNULL)
            stamp.write_text(wanted)
    return target


def placed(script: Path, folder: Path) -> Path:
    """A copy of a node script inside the install `folder`, named by its content (concurrent runs
    and older copies never clash), so that node finds the package from it."""
    source = script.read_bytes()
    scripts = folder / ".piweb-scripts"
    scripts.mkdir(exist_ok=True)
    copy = scripts / f"{script.stem}-{hashlib.sha256(source).hexdigest()[:12]}{script.suffix}"
    if not copy.exists() or copy.read_bytes() != source:
        tmp = scripts / f".{copy.name}.{os.getpid()}.tmp"
        tmp.write_bytes(source)
        tmp.replace(copy)
    return copy
