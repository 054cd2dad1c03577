"""Websocket frames: channel-layer events -> htmx out-of-band HTML (htmx 2 ws extension).

Every top-level element carries ``hx-swap-oob``; all model and user text is escaped (streamed text
with ``django.utils.html.escape``, finished messages through markup.shown_entry, which sanitizes
markdown). Element ids the page provides: ``#chat-log`` (messages on the leaf path),
``#chat-streaming`` (replies being streamed), ``#chat-presence``, ``#session-live`` and
``#chat-parent`` (the composer's parent input); the snapshot fills all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.utils.html import escape

from sessions_app import events
from sessions_app.core import jsjson
from sessions_app.models import Entry, Session, StreamingTurn
from sessions_app.render import markup
from sessions_app.store import review_queue, reviews, selectors

LOG_LIMIT = 60  # messages drawn in the chat log (the newest on the leaf path)
HIDDEN_TYPES = frozenset({"label", "custom"})


@lru_cache(maxsize=512)
def _message_html(session_id: str, entry_id: str, raw: str) -> str:
    """A finished entry, rendered once per process however many viewers receive it (entries never change)."""
    shown = markup.shown_entry(raw, entry_id)
    return render_to_string("sessions_app/chat/message.html", {"s": shown, "session_id": session_id})


def _visible(entry_type: str, raw: str) -> bool:
    if entry_type in HIDDEN_TYPES:
        return False
    return not (entry_type == "custom_message" and jsjson.loads(raw).get("display") is False)


def live(*, seq: int, leaf_id: str | None, count: int | None = None) -> str:
    """#session-live: the session's seq and leaf, and its message count when known (static/piweb/app.js
    shows it in the page header)."""
    context = {"seq": seq, "leaf_id": leaf_id, "count": count, "oob": True}
    return render_to_string("sessions_app/chat/live.html", context)


def presence(viewers: Sequence[str]) -> str:
    return render_to_string("sessions_app/chat/presence.html", {"viewers": viewers, "oob": True})


def log(session: Session) -> str:
    """#chat-log for the session's leaf path (replaces the page's, idempotent)."""
    shown: list[str] = []
    more = False
    if session.leaf_id is not None:
        path = selectors.path_nodes(session=session, leaf_id=session.leaf_id)
        visible = [n for n in path if _visible(n.type, "{}" if n.type != "custom_message" else jsjson.dumps(n.data))]
        more = len(visible) > LOG_LIMIT
        ids = [n.id for n in visible[-LOG_LIMIT:]]
        raws = dict(Entry.objects.filter(session=session, entry_id__in=ids).values_list("entry_id", "raw"))
        shown = [_message_html(session.public_id, i, raws[i]) for i in ids if i in raws]
    return (
        f'<div id="chat-log" class="chat-log" hx-swap-oob="true" data-leaf="{escape(session.leaf_id or "")}">'
        + ("<p class='muted small'>Earlier messages are in the conversation view.</p>" if more else "")
        + "".join(shown)
        + "</div>"
    )


def _blocks(partial: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    blocks = []
    for i, b in enumerate((partial or {}).get("content") or []):
        kind = b.get("type")
        if kind == "text":
            text = b.get("text", "")
        elif kind == "thinking":
            text = b.get("thinking", "")
        elif kind == "toolCall":
            text = jsjson.dumps(b.get("arguments") or {})
        else:
            continue
        blocks.append({"block": i, "kind": kind, "text": text, "name": b.get("name", "")})
    return blocks


def stream_bubble(*, session_id: str, turn: str, model: str, partial: Mapping[str, Any] | None = None) -> str:
    """A streaming reply, appended to #chat-streaming (the page keeps the last copy of each id:
    static/piweb/app.js, so a repeated frame replaces the copy it had)."""
    body = render_to_string(
        "sessions_app/chat/stream.html",
        {"session_id": session_id, "turn": turn, "model": model, "blocks": _blocks(partial)},
    )
    return f'<div hx-swap-oob="beforeend:#chat-streaming">{body}</div>'


def snapshot(
    *, session: Session, turns: Iterable[StreamingTurn], viewers: Sequence[str], reload_log: bool = True
) -> str:
    """Everything a (re)connecting viewer needs: log, live state, replies in progress, presence."""
    parts = [log(session)] if reload_log else []
    parts.append(live(seq=session.last_seq, leaf_id=session.leaf_id, count=session.message_count))
    streaming = "".join(
        render_to_string(
            "sessions_app/chat/stream.html",
            {
                "session_id": session.public_id,
                "turn": str(t.public_id),
                "model": f"{t.model.get('provider', '')}/{t.model.get('id', '')}",
                "blocks": _blocks(t.partial),
            },
        )
        for t in turns
    )
    parts.append(f'<div id="chat-streaming" class="chat-streaming" hx-swap-oob="true">{streaming}</div>')
    parts.append(presence(viewers))
    return "".join(parts)


def entry(event: events.EntryEvent, session: Session | None = None) -> str:
    """A committed entry: appended to #chat-log when it continues the leaf path; the whole log is
    redrawn (from session, read when the event is handled) when the path changed."""
    parts = [live(seq=event["seq"], leaf_id=event["leaf_id"], count=event.get("message_count"))]
    on_path = event["leaf_id"] == event["entry_id"]
    linear = on_path and event["parent_id"] == event["prev_leaf_id"]
    if linear:
        if _visible(event["entry_type"], event["raw"]):
            html = _message_html(event["session"], event["entry_id"], event["raw"])
            parts.append(f'<div hx-swap-oob="beforeend:#chat-log">{html}</div>')
    elif on_path and session is not None:
        parts.append(log(session))
    return "".join(parts)


def leaf(event: events.LeafEvent | events.ChangedEvent, session: Session | None) -> str:
    parts = [live(seq=event["seq"], leaf_id=event["leaf_id"])]
    if session is not None:
        parts.append(log(session))
    return "".join(parts)


def deleted() -> str:
    return (
        '<div id="chat-log" class="chat-log" hx-swap-oob="true"><p class="note">This session was deleted.</p></div>'
        '<div id="chat-streaming" class="chat-streaming" hx-swap-oob="true"></div>'
    )


def turn_start(*, session_id: str, turn: str, model: str) -> str:
    return stream_bubble(session_id=session_id, turn=turn, model=model)


def delta(*, turn: str, index: int, t: float, parts: Iterable[events.DeltaPart]) -> str:
    """One coalesced delta; rendered once per delta by the runner (the event carries it)."""
    turn = escape(turn)
    stamp = f'data-index="{int(index)}" data-t="{float(t):.4f}"'
    out = []
    for part in parts:
        block = f"turn-{turn}-b{int(part['block'])}"
        if part["new"]:
            kind = escape(part["kind"])
            head = ""
            if part["kind"] == "toolCall":
                head = f'<span class="tool-name">{escape(part["name"])}</span> '
            elif part["kind"] == "thinking":
                head = '<span class="muted small">Thinking</span> '
            out.append(
                f'<div hx-swap-oob="beforeend:#turn-{turn}-body" {stamp}>'
                f'<div id="{block}" class="stream-block stream-{kind}">{head}</div></div>'
            )
        if part["text"]:
            out.append(f'<span hx-swap-oob="beforeend:#{block}" {stamp}>{escape(part["text"])}</span>')
    return "".join(out)


def stream_end(event: events.StreamEndEvent) -> str:
    """The streamed copy goes (an empty copy, data-gone, appended last, takes its place and then
    goes too: static/piweb/app.js); the finished message arrives as a session.entry. Frames only
    append to containers every page has, so none targets an element the page may not have."""
    return f'<div hx-swap-oob="beforeend:#chat-streaming"><div id="turn-{escape(event["turn"])}" data-gone></div></div>'


def review(session: Session, entry_id: str, can: Mapping[str, bool]) -> str:
    """An entry's threads, tree marks and the latest verdicts, redrawn: into #review-live (always on
    the page), from where app.js moves them over the shown copies (an out-of-band swap straight onto
    an entry that is not shown would be an htmx error)."""
    threads = reviews.threads_by_entry(session=session, entry_ids=[entry_id]).get(entry_id, [])
    context = {"session": session, "entry_id": entry_id, "threads": threads, "can": can}
    html = render_to_string("sessions_app/partials/threads.html", context)
    # The entry's tree marks and each reviewer's latest verdict go along: app.js places them too.
    marks = reviews.tree_marks(session=session, entry_ids=[entry_id]).get(entry_id)
    html += render_to_string("sessions_app/partials/review_marks.html", {"entry_id": entry_id, "marks": marks})
    latest = {"session": session, "latest": reviews.latest_verdicts(session=session)}
    html += render_to_string("sessions_app/partials/verdict_latest.html", latest)
    return f'<div id="review-live" hx-swap-oob="innerHTML">{html}</div>'


def inbox(user: User, *, queue: bool = False, session: str | None = None) -> str:
    """The header's inbox badge (open review requests for the user) and, for the queue page
    (queue), its section counts; each swaps in by id, so only pages that have them are sent them."""
    counts = review_queue.queue_counts(user=user, session=session) if queue else {}
    count = counts["requested"] if queue and not session else review_queue.inbox_count(user=user)
    return render_to_string("reviews/inbox_frame.html", {"count": count, "counts": counts})
