"""pi's self-contained HTML export of a session, streamed: one file that works offline, with the tree
(branches drawn with guides), filters, search and the conversation, as pi's /export makes it.

The file is written in pieces so that memory stays bounded whatever the session's size: the page's
head, then the entries a batch at a time (selectors.entry_batches), each batch one
``<script type="application/json" class="piweb-entries">`` block, then the script that reads them.
Every entry's conversation card is rendered here, on the server, by the app's own rules
(markup.shown_data: markdown-it with raw HTML off, then nh3); the script puts that sanitised HTML in
place and every other text through textContent. The JSON blocks escape "<", ">" and "&", so no text
can close its script element. A Content-Security-Policy (in a meta element, and as the response's
header) lets only this script and this style run: nothing in the data can execute.

With reviews, the session's review comments and verdicts follow the entries, a batch at a time, as
``piweb-reviews`` blocks: each body is the sanitised HTML stored when it was written
(store.reviews), put in place like a card's; names and dates go through textContent. The script
draws each entry's threads and verdicts under its card and their marks on its tree row.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import orjson
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from sessions_app.core import jsjson
from sessions_app.models import Session
from sessions_app.render import markup
from sessions_app.store import reviews, selectors

ENTRIES_MARK = "<!--piweb-entries-->"
FIELDS = ("seq", "entry_id", "parent_id", "type", "role", "ts_ms", "preview", "raw")
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


def json_text(value: Any) -> str:
    """JSON that is safe inside a <script> element (as Django's json_script escapes it)."""
    return orjson.dumps(value).decode().translate(_JSON_ESCAPES)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@lru_cache(maxsize=1)
def _assets() -> tuple[str, str, str]:
    """The export's script, its style and the policy that allows exactly those two."""
    script = render_to_string("sessions_app/export/export.js")
    style = markup.pygments_css() + render_to_string("sessions_app/export/export.css")
    policy = (
        f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return script, style, policy


def export_policy() -> str:
    """The Content-Security-Policy of an HTML export (its meta element says the same)."""
    return _assets()[2]


def _blocks(blocks: list[markup.Block], raw: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b.kind in ("text", "thinking"):
            out.append({"k": b.kind, "h": str(b.html or "")})
        elif b.kind == "tool_call":
            out.append({"k": b.kind, "nm": b.name, "id": b.call_id, "x": b.text, "h": str(b.html or "")})
        elif b.kind == "output":
            out.append({"k": b.kind, "x": b.text, "e": b.is_error})
        elif b.kind == "image":
            image = markup.image_block(raw, b.index)
            if image is not None:
                out.append({"k": "image", "src": f"data:{image[0]};base64,{''.join(image[1].split())}"})
    return out


def entry_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """One entry as the export's script reads it: tree fields, and its card if it draws one."""
    _, entry_id, parent_id, kind, role, ts_ms, preview, raw = row
    data = jsjson.loads(raw)
    record: dict[str, Any] = {"i": entry_id, "p": parent_id, "t": kind, "ts": ts_ms, "x": preview}
    if role:
        record["r"] = role
    if kind == "label":
        record["g"], record["l"] = data.get("targetId"), data.get("label") or ""
    shown = markup.shown_data(data, entry_id, full=True)
    if shown.kind != "hidden":
        record.update(k=shown.kind, ti=shown.title, m=shown.meta, n=shown.note, b=_blocks(shown.blocks, raw))
        if shown.kind == "tool" and shown.data.get("call_id"):
            record["c"] = str(shown.data["call_id"])
    return record


def review_records(session: Session) -> Iterator[list[dict[str, Any]]]:
    """The session's comments ("k": "c") and verdicts ("k": "v") as the export's script reads them,
    a batch at a time; a deleted comment keeps its place with no body."""
    for comments in reviews.comment_batches(session=session):
        yield [
            {
                "k": "c", "id": c.pk, "e": c.entry_id, "p": c.parent_id, "a": c.author_username,
                "t": reviews.iso_utc(c.created_at), "h": None if c.deleted_at else c.body_html,
                "r": resolved, "ed": c.edited_at is not None,
            }
            for c, resolved in comments
        ]  # fmt: skip
    for verdicts in reviews.verdict_batches(session=session):
        yield [
            {
                "k": "v", "id": v.pk, "e": v.entry_id, "a": v.reviewer_username, "v": v.verdict,
                "t": reviews.iso_utc(v.created_at), "h": v.body_html, "s": v.scores,
            }
            for v in verdicts
        ]  # fmt: skip


def export_chunks(session: Session, *, batch: int | None = None, with_reviews: bool = False) -> Iterator[bytes]:
    """The HTML export, a piece at a time: the head at once, then one piece per batch of entries
    (and, with_reviews, per batch of comments or verdicts)."""
    script, style, policy = _assets()
    header = jsjson.loads(session.header_raw)
    page = render_to_string(
        "sessions_app/export/page.html",
        {
            "title": session.name or session.first_message[:80] or session.public_id,
            "style": mark_safe(style),
            "script": mark_safe(script),
            "policy": policy,
            "meta": mark_safe(json_text({"header": header, "leafId": session.leaf_id})),
        },
    )
    head, tail = page.split(ENTRIES_MARK)
    yield head.encode()
    for rows in selectors.entry_batches(session=session, fields=FIELDS, batch=batch, upto=session.last_seq):
        records = json_text([entry_record(row) for row in rows])
        yield f'<script type="application/json" class="piweb-entries">{records}</script>\n'.encode()
    if with_reviews:
        for part in review_records(session):
            yield f'<script type="application/json" class="piweb-reviews">{json_text(part)}</script>\n'.encode()
    yield tail.encode()
