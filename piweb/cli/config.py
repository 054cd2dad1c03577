"""Where the CLI finds its server and token: --server/--token, then PIWEB_SERVER/PIWEB_TOKEN, then
the config file `piweb login` writes (mode 0600: it holds a token)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


class ConfigError(Exception):
    """Nothing says which server, or with which token."""


@dataclass(frozen=True, slots=True)
class Remote:
    server: str  # base URL, no trailing slash
    token: str


def config_path() -> Path:
    explicit = os.environ.get("PIWEB_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "piweb" / "config.json"


def _saved() -> dict[str, str]:
    path = config_path()
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    return {k: v for k, v in value.items() if isinstance(v, str)} if isinstance(value, dict) else {}


def resolve(server: str | None, token: str | None) -> Remote:
    saved = _saved() if not (server and token) else {}
    server = server or os.environ.get("PIWEB_SERVER") or saved.get("server")
    token = token or os.environ.get("PIWEB_TOKEN") or saved.get("token")
    if not server:
        raise ConfigError("no server: pass --server URL, set PIWEB_SERVER, or run `piweb login`")
    if not token:
        raise ConfigError("no token: pass --token TOKEN, set PIWEB_TOKEN, or run `piweb login`")
    return Remote(server.rstrip("/"), token)


def save(remote: Remote) -> Path:
    """Write the config file, readable by its owner only (created so: never briefly world-readable)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"server": remote.server, "token": remote.token}, handle)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT
    return path
