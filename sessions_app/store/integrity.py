"""Tamper evidence for stored sessions: everything stored about a session is checked against what
it must be.

- Each entry's chain hash and the session's running digest are recomputed (core/chain.py): a
  changed, removed, reordered or inserted line is found.
- The columns each entry's row derives from its line and its place in the tree (rows.DERIVED:
  ids, type, depth, the path state the context is built from, ...) are derived again by the
  import's own steps (piformat reads each stored line, core.intake places it, rows.entry_row makes
  its row) and compared: a column changed by SQL is named, with its stored and expected values.
  So are the session's listing fields (core.listing) and its leaf.
- The message spans the context serves a message's bytes by (models.MessageSpan) are checked to
  name that message's JSON.
- Which sessions exist, and who owns them, is checked against the audit trail (store/accounting.py).

Sessions are read one at a time and their entries streamed in seq order, in batches: memory grows
with a session's entry count (an id, a hash and a place per entry), not with its lines' size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from django.conf import settings
from django.db import connection

from sessions_app.core import jsjson, piformat
from sessions_app.core.chain import keyed
from sessions_app.core.context import serialises
from sessions_app.core.intake import Intake, Placed
from sessions_app.core.listing import Listing
from sessions_app.models import Entry, Session
from sessions_app.store import accounting, rows
from sessions_app.store.services import chain_key

BATCH = 2000  # entries read per query
MAX_FINDINGS = 20  # reported per session; more are counted


@dataclass(frozen=True, slots=True)
class Finding:
    seq: int  # 0 when the problem is with the session as a whole
    entry_id: str
    message: str
    column: str = ""  # for a stored value that differs from what it must be: the column,
    stored: Any = None  # its value,
    expected: Any = None  # and the value derived from the entries (or recorded in the audit trail)

    def __str__(self) -> str:
        where = f"entry #{self.seq} ({self.entry_id})" if self.seq else "session"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class SessionReport:
    public_id: str
    entries: int = 0  # entries read
    findings: list[Finding] = field(default_factory=list)
    more: int = 0  # findings beyond MAX_FINDINGS, counted only

    def add(self, finding: Finding) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)
        else:
            self.more += 1


def _differs(column: str, stored: Any, expected: Any) -> str:
    return f"{column} is {stored!r}, its line says {expected!r}"


# The session columns core.listing keeps from the entries.
LISTING = ("name", "message_count", "first_message", "modified_ms", "cost", "total_tokens")
_derived = itemgetter(*(rows.COLUMNS.index(c) for c in rows.DERIVED))  # a row's derived columns
_LIMITS = piformat.Limits(max_line_bytes=1 << 62, max_file_bytes=1 << 62)  # depth: settings, below
_NO_SOURCE = b""


def session_verify(*, session: Session) -> list[Finding]:
    """Every sign (up to MAX_FINDINGS) that the session's stored entries, the columns derived from
    them, or its owner or team were changed outside piweb; empty if all is intact."""
    report = session_report(session=session)
    _account(report, accounting.ownership_check([session.public_id]).get(session.public_id, ()))
    return report.findings


def session_report(*, session: Session) -> SessionReport:
    """The session's entries and the columns derived from them, checked (not its ownership)."""
    report = SessionReport(session.public_id)
    fresh = Session.objects.filter(pk=session.pk)
    row = fresh.values_list("last_seq", "entries_digest", "leaf_id", "deleting", *LISTING).first()
    if row is None:
        return report  # deleted meanwhile: the audit trail says whether through session_delete
    last_seq, entries_digest, leaf_id, deleting, *listing = row
    if deleting:
        # session_delete removes the row in the transaction that would set it: set by hand, it
        # hides the session from everyone.
        report.add(Finding(0, "", "it is marked as being deleted, but was not deleted", "deleting", True, False))
    # Only the entries the session row knows of: an append after it was read writes both.
    entries = Entry.objects.filter(session_id=session.pk, seq__lte=last_seq)
    chains = dict(entries.values_list("entry_id", "chain_hash").iterator(chunk_size=BATCH * 5))
    check = _Check(report, chains)
    columns = ("seq", "raw", "chain_hash", *rows.DERIVED)
    batch: list[tuple[Any, ...]] = []
    for stored in entries.order_by("seq").values_list(*columns).iterator(chunk_size=BATCH):
        batch.append(stored)
        if len(batch) == BATCH:
            check.entries(batch)
            batch = []
    check.entries(batch)
    check.finish()
    if report.entries != last_seq:
        report.add(Finding(0, "", f"{last_seq} entries were written, {report.entries} are stored"))
    if check.digest != (entries_digest or ""):
        report.add(Finding(0, "", "the session digest does not match its entries"))
    for column, stored_value, expected in zip(LISTING, listing, _listing(check.intake), strict=True):
        if stored_value != expected:
            report.add(Finding(0, "", _differs(column, stored_value, expected), column, stored_value, expected))
    if leaf_id is not None and leaf_id not in chains:
        report.add(Finding(0, "", f"its leaf {leaf_id!r} is not one of its entries", "leaf_id", leaf_id, None))
    _spans(report, session.pk)
    later = Entry.objects.filter(session_id=session.pk, seq__gt=last_seq).count()
    if later and fresh.filter(last_seq__lt=last_seq + later).exists():
        report.add(Finding(0, "", f"{later} entries are stored beyond the last one written (#{last_seq})"))
    return report


# Each message span with the bytes it names and its entry's line (as UTF-8 bytes).
_SPANS = """
SELECT s.seq, e.entry_id, {line}, s.start, s.length FROM sessions_app_messagespan s
LEFT JOIN sessions_app_entry e ON e.session_id = s.session_id AND e.seq = s.seq
WHERE s.session_id = %s ORDER BY s.seq
"""


def _spans(report: SessionReport, session_pk: int) -> None:
    """Each message span (models.MessageSpan: the context serves the bytes it names) still names
    a text of its entry's message, as core.context.message_span records one."""
    line = "CAST(e.raw AS BLOB)" if connection.vendor == "sqlite" else "convert_to(e.raw, 'UTF8')"
    with connection.cursor() as cursor:
        cursor.execute(_SPANS.format(line=line), [session_pk])
        while found := cursor.fetchmany(BATCH):
            for seq, entry_id, raw, start, length in found:
                if entry_id is None:
                    report.add(Finding(seq, "", "a message span names no entry"))
                    continue
                data = bytes(raw)
                try:
                    entry = jsjson.loads(data)
                except ValueError:
                    entry = None  # (an unreadable line is a finding of its own)
                message = entry.get("message") if isinstance(entry, dict) else None
                if not serialises(data[start - 1 : start - 1 + length], message):
                    report.add(Finding(seq, entry_id, "its message span does not name its message's JSON"))


def _listing(intake: Intake) -> Sequence[Any]:
    return [getattr(intake.listing, name) for name in LISTING]


class _Check:
    """One session's entries, in seq order: their chain, their digest, their derived columns."""

    def __init__(self, report: SessionReport, chains: dict[str, str | None]) -> None:
        self.report = report
        self.chains = chains
        self.chain_broken = False  # after the first break, every hash below it is suspect: one finding
        self.digest = ""
        self.intake = Intake(listing=Listing())
        self.held: dict[str, tuple[Any, ...]] = {}  # entries the intake places at finish()
        self.states: dict[int, Any] = {}
        self.limits = piformat.Limits(
            max_line_bytes=_LIMITS.max_line_bytes,
            max_file_bytes=_LIMITS.max_file_bytes,
            max_depth=settings.PIWEB_IMPORT_MAX_DEPTH,
        )

    def entries(self, batch: Sequence[tuple[Any, ...]]) -> None:
        """The next entries, in seq order: (seq, raw, chain_hash, *rows.DERIVED) each."""
        if not batch:
            return
        self._chain(batch)
        # Read as one buffer, one line each, as the import reads a file (unless a stored line holds
        # a line break, which none written by piweb does).
        if any("\n" in stored[1] for stored in batch):
            for stored in batch:
                if "\n" in stored[1]:
                    self._unreadable(stored, "it holds a line break")
                else:
                    self._read([stored])
        else:
            self._read(batch)

    def _chain(self, batch: Sequence[tuple[Any, ...]]) -> None:
        """Each entry's chain hash and the running digest (core.chain's, inlined as rows.hash_rows
        has them: this loop runs per entry)."""
        inner, outer = keyed(chain_key())
        chains, report, digest = self.chains, self.report, self.digest
        for stored in batch:
            seq, raw, chain, entry_id, parent_id = stored[:5]
            report.entries += 1
            if not self.chain_broken:
                message = None
                if seq != report.entries:
                    message = f"expected entry #{report.entries} here: entries were removed or inserted"
                elif parent_id is not None and parent_id not in chains:
                    message = f"its parent {parent_id} is missing"
                else:
                    parent_chain = chains[parent_id] if parent_id is not None else None
                    h = inner.copy()
                    h.update(f"{parent_chain or ''}\n{seq}\n{entry_id}\n".encode())
                    h.update(raw.encode())
                    o = outer.copy()
                    o.update(h.digest())
                    if chain != o.hexdigest():
                        message = "its content or its parent's hash was changed"
                if message is not None:
                    # Below the first break every hash is suspect: one finding.
                    report.add(Finding(seq, entry_id, message))
                    self.chain_broken = True
            h = inner.copy()
            h.update(f"{digest}:{chain or ''}".encode())
            o = outer.copy()
            o.update(h.digest())
            digest = o.hexdigest()
        self.digest = digest

    def _read(self, batch: Sequence[tuple[Any, ...]]) -> None:
        """The entries read and placed as an import would: their derived columns compared."""
        text = "\n".join([stored[1] for stored in batch]).encode()
        first = batch[0][0]  # line numbers are seqs (the intake's problems name them)
        header = piformat.Header({}, "", first - 1, 0, piformat.CURRENT_VERSION)
        read = 0  # the batch's entries whose line has been read
        add, held, compare = self.intake.add, self.held, self._compare
        for item in piformat.read_entries(text, header, self.limits):
            number = item.line - first
            for skipped in batch[read:number]:  # blank lines: read_entries says nothing of them
                self._unreadable(skipped, "it is blank")
            read = number + 1
            stored = batch[number]
            if type(item) is not piformat.Line:
                self._unreadable(stored, item.message if isinstance(item, piformat.Problem) else "not an entry")
                continue
            # The intake keeps each line's source to compare repeated ids, which a stored session
            # cannot have (a unique constraint): dropping it keeps memory off the lines' size.
            # (offset -1: no file to read a line again from; a repeated id compares empty texts)
            placed = add(item._replace(source=_NO_SOURCE, start=0, end=0, offset=-1))
            if placed is not None:
                compare(placed, stored)
            else:
                held[item.id] = stored
        for skipped in batch[read:]:
            self._unreadable(skipped, "it is blank")

    def _unreadable(self, stored: tuple[Any, ...], problem: str) -> None:
        self.report.add(Finding(stored[0], stored[3], f"its line cannot be read: {problem}"))

    def finish(self) -> None:
        for placed in self.intake.finish():
            self._compare(placed, self.held.pop(placed.line.id))
        for problem in self.intake.problems:
            self.report.add(Finding(problem.line, "", f"its line does not fit the tree: {problem.message}"))

    def _compare(self, placed: Placed, stored: tuple[Any, ...]) -> None:
        expected = _derived(rows.entry_row(placed, None, 0, None, None, self.states))
        if expected == stored[3:]:
            return
        for column, value, should in zip(rows.DERIVED, stored[3:], expected, strict=True):
            if value != should:
                self.report.add(Finding(stored[0], stored[3], _differs(column, value, should), column, value, should))


def sessions_verify() -> Iterator[SessionReport]:
    """A report for every stored session, then one for each session the audit trail says exists
    that is gone; ownership is compared with the audit trail's."""
    owners = accounting.ownership_check()
    # (not an import's staging session: its digest and audit record are written when it is published)
    for session in Session.objects.filter(staging__isnull=True).order_by("pk").only("pk", "public_id").iterator():
        report = session_report(session=session)
        _account(report, owners.pop(session.public_id, ()))
        yield report
    for public_id, discrepancies in owners.items():
        report = SessionReport(public_id)
        _account(report, discrepancies)
        yield report


def _account(report: SessionReport, discrepancies: Iterable[accounting.Discrepancy]) -> None:
    for d in discrepancies:
        report.add(Finding(0, "", d.message, d.column, d.stored, d.expected))
