"""Tamper evidence for stored sessions: recompute every entry's chain hash and the session digest."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sessions_app.models import Entry, Session
from sessions_app.store.services import entry_chain_hash, session_digest


@dataclass(frozen=True, slots=True)
class Finding:
    seq: int  # 0 when the problem is with the session as a whole
    entry_id: str
    message: str


def session_verify(*, session: Session) -> Finding | None:
    """The first sign that the session's stored history was rewritten, or None if it is intact:
    a changed, removed, reordered or inserted entry breaks a chain hash, the dense seq order, or
    the running digest kept on the session."""
    rows = list(
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("seq", "entry_id", "parent_id", "raw", "chain_hash")
    )
    stored = {entry_id: chain for _, entry_id, _, _, chain in rows}
    digest = ""
    for expected, (seq, entry_id, parent_id, raw, chain) in enumerate(rows, start=1):
        if seq != expected:
            return Finding(seq, entry_id, f"expected entry #{expected} here: entries were removed or inserted")
        if parent_id is not None and parent_id not in stored:
            return Finding(seq, entry_id, f"its parent {parent_id} is missing")
        if chain != entry_chain_hash(stored.get(parent_id) if parent_id else None, seq, entry_id, raw):
            return Finding(seq, entry_id, "its content or its parent's hash was changed")
        digest = session_digest(digest, chain)
    if len(rows) != session.last_seq:
        return Finding(0, "", f"{session.last_seq} entries were written, {len(rows)} are stored")
    if digest != (session.entries_digest or ""):
        return Finding(0, "", "the session digest does not match its entries")
    return None


def sessions_verify() -> Iterator[tuple[Session, Finding | None]]:
    # (not an import's staging session: its digest is written when it is published)
    for session in Session.objects.filter(staging__isnull=True).order_by("pk").iterator():
        yield session, session_verify(session=session)
