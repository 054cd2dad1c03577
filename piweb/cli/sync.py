"""`piweb sync`: mirror pi session files to a piweb server, sending only the complete lines it lacks.

Per file: ask the server what it holds (GET /api/sync/<pi id>: bytes, lines, SHA-256 of that
prefix). None: the first push sends the file's complete lines (POST /api/sync). Less than the file,
with the same prefix: the new lines go in batches (POST /api/sync/<id>/lines), each naming the prefix
it extends, so a batch is stored once or refused (409) and the next run resumes from the server's
offset. A prefix that differs (the file was rewritten or truncated) is reported, never merged.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from piweb.cli import files
from piweb.cli.http import ApiError, Client

BATCH_BYTES = 4 * 1024 * 1024  # the most one push of new lines carries (a longer line goes alone)
PROGRESS_BYTES = 1024 * 1024  # a first push at least this big shows a progress bar
RETRIES_ON_CONFLICT = 3

Kind = Literal["created", "appended", "replaced", "current", "waiting", "changed", "failed", "would push"]


@dataclass(slots=True)
class Outcome:
    path: Path
    kind: Kind
    lines: int = 0  # lines sent (or, with --dry-run, that would be)
    message: str = ""
    session: str = ""  # the server id


@dataclass(slots=True)
class Options:
    team: str = ""
    dry_run: bool = False
    # This machine's name as the session page shows it (PIWEB_HOST overrides the host name).
    host: str = field(default_factory=lambda: os.environ.get("PIWEB_HOST") or socket.gethostname())
    progress: bool = True


def sync_file(client: Client, path: Path, options: Options) -> Outcome:
    """Bring the server's mirror of one file up to date with its complete lines."""
    data = files.complete_lines(path.read_bytes())
    header = files.header_of(data)
    if header is None:
        return Outcome(path, "waiting", message="no session header yet")
    for _ in range(RETRIES_ON_CONFLICT):
        state = _state(client, header["id"])
        try:
            return _bring_up_to_date(client, path, data, header, state, options)
        except ApiError as failed:
            if failed.status != 409 or failed.code != "offset_mismatch":
                raise
            # Another push (this file's from another run, or a second machine) moved the server on.
    return Outcome(path, "failed", message="the server's copy kept changing; try again")


def _state(client: Client, pi_id: str) -> dict[str, Any] | None:
    try:
        state = client.get_json(f"/api/sync/{quote(pi_id, safe='')}")
    except ApiError as failed:
        if failed.status == 404:
            return None
        raise
    return state if isinstance(state, dict) else None


def _form(options: Options, path: Path) -> dict[str, str | int]:
    return {"host": options.host, "path": str(path.resolve())}


def _bring_up_to_date(
    client: Client, path: Path, data: bytes, header: dict[str, Any], state: dict[str, Any] | None, options: Options
) -> Outcome:
    lines = data.count(b"\n")
    if state is None:
        if options.dry_run:
            return Outcome(path, "would push", lines)
        form = _form(options, path) | ({"team": options.team} if options.team else {})
        answer = _first_push(client, data, form, options)
        return Outcome(path, "created" if answer["created"] else "appended", lines, session=answer["state"]["id"])
    have, session = int(state["bytes"]), str(state["id"])
    prefix = hashlib.sha256(data[:have]) if have <= len(data) else None
    if prefix is None or prefix.hexdigest() != state["sha256"]:
        if header.get("version") == 3 and not options.dry_run:
            return _replace_if_migrated(client, path, data, session, options)
        return Outcome(path, "changed", message=_changed_advice(session), session=session)
    if have == len(data):
        return Outcome(path, "current", session=session)
    sent = data[have:].count(b"\n")
    if options.dry_run:
        return Outcome(path, "would push", sent, session=session)
    offset = have
    for batch in _batches(data, have):
        after = prefix.copy()
        after.update(batch)
        form = _form(options, path) | {
            "offset": offset, "sha256": prefix.hexdigest(), "sha256_after": after.hexdigest(),
        }  # fmt: skip
        client.post_file(f"/api/sync/{quote(session, safe='')}/lines", batch, form)
        offset += len(batch)
        prefix = after
    return Outcome(path, "appended", sent, session=session)


def _replace_if_migrated(client: Client, path: Path, data: bytes, session: str, options: Options) -> Outcome:
    """pi may have migrated the file to v3 in place (new entry ids): the server replaces the mirror
    if that is all that changed (keeping piweb's labels), and refuses (409) otherwise."""
    try:
        answer = client.post_file(f"/api/sync/{quote(session, safe='')}/replace", data, _form(options, path))
    except ApiError as failed:
        if failed.status == 409 and failed.code == "prefix_changed":
            return Outcome(path, "changed", message=_changed_advice(session), session=session)
        raise
    return Outcome(path, "replaced", data.count(b"\n"), session=str(answer["state"]["id"]))


def _first_push(client: Client, data: bytes, form: dict[str, str | int], options: Options) -> Any:
    if not options.progress or len(data) < PROGRESS_BYTES:
        return client.post_file("/api/sync", data, form)
    from tqdm import tqdm  # (only for a big first push)

    with tqdm(total=len(data), unit="B", unit_scale=True, desc="first push", leave=False) as bar:
        return client.post_file("/api/sync", data, form, progress=bar.update)


def _batches(data: bytes, start: int) -> list[bytes]:
    """data[start:] in pieces of whole lines, each at most BATCH_BYTES unless one line is longer."""
    out = []
    while start < len(data):
        end = data.rfind(b"\n", start, start + BATCH_BYTES) + 1
        if end <= start:
            end = data.index(b"\n", start) + 1
        out.append(data[start:end])
        start = end
    return out


def _changed_advice(session: str) -> str:
    return (
        f"the file no longer starts with what piweb holds (session {session}): it was rewritten or truncated. "
        "piweb keeps its copy as it was; to mirror the file anew, delete that session in piweb "
        "(or continue from it in a fork) and sync again"
    )


def summary(outcomes: list[Outcome]) -> str:
    """One line: how many files, what happened to them (each push, with --watch), lines sent."""
    counts = Counter(o.kind for o in outcomes)
    sent = sum(o.lines for o in outcomes if o.kind in ("created", "appended", "replaced"))
    order: tuple[Kind, ...] = (
        "created",
        "appended",
        "replaced",
        "current",
        "would push",
        "waiting",
        "changed",
        "failed",
    )
    parts = [f"{counts[kind]} {kind}" for kind in order if counts[kind]]
    text = ", ".join(parts) or "nothing to do"
    return f"piweb sync: {len({o.path for o in outcomes})} file(s): {text}; {sent} line(s) sent"
