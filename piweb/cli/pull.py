"""`piweb pull ID`: write a session back as a pi file (the server's JSONL export, byte for byte)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from piweb.cli import files
from piweb.cli.http import ApiError, Client


def pull(client: Client, session_id: str, out: Path | None, into_pi: bool, with_labels: bool = False) -> Path:
    """Download the session (found by server id, else by pi's id) to out, to pi's folder for its
    cwd (into_pi), or to pi's own file name in the current directory. Returns the path written.
    A mirror comes back as the pushed file (what piweb added to it left out; with_labels: its
    labels appended as pi label entries)."""
    response = _export(client, session_id, "?mirror=true" + ("&labels=true" if with_labels else ""))
    with response:
        name = _filename(response.headers.get("Content-Disposition", "")) or f"{session_id}.jsonl"
        first = response.readline()
        try:
            header = json.loads(first)
        except ValueError:
            header = {}
        if out is None:
            cwd = header.get("cwd") if isinstance(header, dict) else None
            folder = files.agent_dir() / "sessions" / files.cwd_dir_name(cwd or "") if into_pi else Path.cwd()
            out = folder / name
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".part")
        with partial.open("wb") as handle:
            handle.write(first)
            while piece := response.read(256 * 1024):
                handle.write(piece)
        partial.replace(out)  # a reader (pi's /resume) never sees half a file
    return out


def _export(client: Client, session_id: str, query: str) -> Any:
    try:
        return client.get_stream(f"/api/sessions/{quote(session_id, safe='')}/export.jsonl{query}")
    except ApiError as failed:
        if failed.status != 404:
            raise
    state = client.get_json(f"/api/sync/{quote(session_id, safe='')}")  # pi's id, when the server's differs
    return client.get_stream(f"/api/sessions/{quote(str(state['id']), safe='')}/export.jsonl{query}")


def _filename(disposition: str) -> str | None:
    match = re.search(r'filename="([^"/\\]+)"', disposition)
    return match.group(1) if match else None
