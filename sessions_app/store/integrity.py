"""Tamper evidence for stored sessions: everything stored about a session is checked against what
it must be.

- Each entry's chain hash and the session's running digest are recomputed (core/chain.py): a
  changed, removed, reordered or inserted line is found.
- The columns each entry's row derives from its line and its place in the tree (rows.DERIVED:
  ids, type, depth, the path state the context is built from, ...) are derived again by the
  import's own steps (piformat reads each stored line, core.intake places it, rows.entry_row makes
  its row) and compared: a column changed by SQL is named, with its stored and expected values.
  So are the session's listing fields (core.listing) and its leaf.
- Which sessions exist, and who owns them, is checked against the audit trail (store/accounting.py).

Sessions are read one at a time and their entries streamed in seq order, in batches: memory grows
with a session's entry count (an id, a hash and a place per entry), not with its lines' size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from sessions_app.core import piformat
from sessions_app.core.intake import Intake, Placed
from sessions_app.core.listing import Listing
from sessions_app.models import Entry, Session
from sessions_app.store import accounting, rows
from sessions_app.store.services import entry_chain_hash, session_digest

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
LISTING = ("name", "message_count", "first_message", "modified_ms")
_DERIVED_AT = [rows.COLUMNS.index(c) for c in rows.DERIVED]
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
    for stored in entries.order_by("seq").values_list(*columns).iterator(chunk_size=BATCH):
        check.entry(stored)
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
    later = Entry.objects.filter(session_id=session.pk, seq__gt=last_seq).count()
    if later and fresh.filter(last_seq__lt=last_seq + later).exists():
        report.add(Finding(0, "", f"{later} entries are stored beyond the last one written (#{last_seq})"))
    return report


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
        self.held: dict[str, tuple[int, Sequence[Any]]] = {}  # entries the intake places at finish()
        self.states: dict[int, Any] = {}
        self.limits = piformat.Limits(
            max_line_bytes=_LIMITS.max_line_bytes,
            max_file_bytes=_LIMITS.max_file_bytes,
            max_depth=settings.PIWEB_IMPORT_MAX_DEPTH,
        )

    def entry(self, stored: Sequence[Any]) -> None:
        seq, raw, chain, entry_id, parent_id = stored[0], stored[1], stored[2], stored[3], stored[4]
        report = self.report
        report.entries += 1
        if not self.chain_broken:
            message = None
            if seq != report.entries:
                message = f"expected entry #{report.entries} here: entries were removed or inserted"
            elif parent_id is not None and parent_id not in self.chains:
                message = f"its parent {parent_id} is missing"
            elif chain != entry_chain_hash(self.chains.get(parent_id) if parent_id else None, seq, entry_id, raw):
                message = "its content or its parent's hash was changed"
            if message is not None:
                report.add(Finding(seq, entry_id, message))
                self.chain_broken = True
        self.digest = session_digest(self.digest, chain or "")
        self._place(seq, raw, stored[3:])

    def _place(self, seq: int, raw: str, derived: Sequence[Any]) -> None:
        """The entry read and placed as an import would: its derived columns compared."""
        text = raw.encode()
        header = piformat.Header({}, "", seq - 1, 0, piformat.CURRENT_VERSION)
        item = next(piformat.read_entries(text, header, self.limits), None)
        if not isinstance(item, piformat.Line):
            problem = item.message if isinstance(item, piformat.Problem) else "it is not an entry line"
            self.report.add(Finding(seq, derived[0], f"its line cannot be read: {problem}"))
            return
        # The intake keeps each line's source to compare repeated ids, which a stored session
        # cannot have (a unique constraint): dropping it keeps memory off the lines' size.
        placed = self.intake.add(item._replace(source=_NO_SOURCE, start=0, end=0))
        if placed is not None:
            self._compare(placed, seq, derived)
        else:
            self.held[item.id] = (seq, derived)

    def finish(self) -> None:
        for placed in self.intake.finish():
            seq, derived = self.held.pop(placed.line.id)
            self._compare(placed, seq, derived)
        for problem in self.intake.problems:
            self.report.add(Finding(problem.line, "", f"its line does not fit the tree: {problem.message}"))

    def _compare(self, placed: Placed, seq: int, derived: Sequence[Any]) -> None:
        expected = rows.entry_row(placed, None, 0, None, None, self.states)
        for column, stored, at in zip(rows.DERIVED, derived, _DERIVED_AT, strict=True):
            if stored != expected[at]:
                message = _differs(column, stored, expected[at])
                self.report.add(Finding(seq, derived[0], message, column, stored, expected[at]))


def sessions_verify() -> Iterator[SessionReport]:
    """A report for every stored session, then one for each session the audit trail says exists
    that is gone; ownership is compared with the audit trail's."""
    owners = accounting.ownership_check()
    for session in Session.objects.order_by("pk").only("pk", "public_id").iterator():
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
