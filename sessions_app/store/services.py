"""Writes. The only code that adds entries or changes a session; browser and API both call it.

Every change is an appended entry (pi's model), except moving the leaf, which pi keeps in memory and
piweb persists on the session row.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.signals import setting_changed
from django.db import IntegrityError, connection, transaction
from django.dispatch import receiver
from django.utils import timezone

from sessions_app import events
from sessions_app.access import audit, permissions
from sessions_app.core import chain as chainhash
from sessions_app.core import jsjson, piformat
from sessions_app.core.context import PathState, StateJson, advance, state_json
from sessions_app.core.listing import storable, update_listing
from sessions_app.core.tree import Node, parse_timestamp_ms, row_text
from sessions_app.errors import (
    EntryNotFound,
    ImportRejected,
    InvalidEntry,
    SessionConflict,
    SessionForbidden,
    SessionNotFound,
)
from sessions_app.models import Entry, Session
from sessions_app.store import checkpoint, entry_insert
from sessions_app.store import selectors as sel
from sessions_app.store.importing import gcpause, worker
from sessions_app.store.importing.worker_client import AVAILABLE as WORKER_AVAILABLE
from sessions_app.store.importing.worker_client import WorkerRun

log = logging.getLogger(__name__)

UNSET: Any = object()

# Key order pi gives each entry type when it creates one (JSON.stringify keeps insertion order).
BASE = ("type", "id", "parentId", "timestamp")
KEY_ORDER: dict[str, tuple[str, ...]] = {
    "message": (*BASE, "message"),
    "thinking_level_change": (*BASE, "thinkingLevel"),
    "model_change": (*BASE, "provider", "modelId"),
    "compaction": (*BASE, "summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook"),
    "branch_summary": (*BASE, "fromId", "summary", "details", "fromHook"),
    "custom": ("type", "customType", "data", "id", "parentId", "timestamp"),
    "custom_message": ("type", "customType", "content", "display", "details", "id", "parentId", "timestamp"),
    "label": (*BASE, "targetId", "label"),
    "session_info": (*BASE, "name"),
}


def now_iso() -> str:
    """new Date().toISOString(): UTC, milliseconds, Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def import_limits() -> piformat.Limits:
    return piformat.Limits(
        max_line_bytes=settings.PIWEB_IMPORT_MAX_LINE_BYTES,
        max_file_bytes=settings.PIWEB_IMPORT_MAX_FILE_BYTES,
        max_depth=settings.PIWEB_IMPORT_MAX_DEPTH,
    )


# --- the one insert path -------------------------------------------------------------------


@dataclass(slots=True)
class _Known:
    depth: int
    state: PathState
    chain: str = ""  # the entry's chain hash (see entry_chain_hash)


def entry_chain_hash(parent_chain: str | None, seq: int, entry_id: str, raw: str | bytes) -> str:
    """See chain.entry_chain_hash; the key is settings.PIWEB_CHAIN_KEY."""
    line = raw.encode() if isinstance(raw, str) else raw
    return chainhash.entry_chain_hash(_chain_key(), parent_chain, seq, entry_id, line)


def session_digest(previous: str, chain_hash: str) -> str:
    return chainhash.session_digest(_chain_key(), previous, chain_hash)


_KEY: list[bytes] = []  # settings.PIWEB_CHAIN_KEY as bytes, read once: this runs per stored entry


def _chain_key() -> bytes:
    if not _KEY:
        _KEY.append(str(settings.PIWEB_CHAIN_KEY).encode())
    return _KEY[0]


@receiver(setting_changed)
def _chain_key_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("PIWEB_CHAIN_KEY", "SECRET_KEY"):
        _KEY.clear()


def _stored_states(session: Session, ids: Iterable[str]) -> dict[str, _Known]:
    wanted = list(set(ids))
    found: dict[str, _Known] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT entry_id, depth, ctx_thinking, ctx_model, ctx_compaction_id, chain_hash"
                f" FROM sessions_app_entry WHERE session_id = %s AND entry_id IN ({', '.join(['%s'] * len(chunk))})",
                [session.pk, *chunk],
            )
            rows = cursor.fetchall()
        for entry_id, depth, thinking, model, compaction, chain in rows:
            found[entry_id] = _Known(
                depth,
                PathState(jsjson.loads(thinking), jsjson.loads(model) if model else None, compaction),
                chain or "",
            )
    return found


def _is_stored_ancestor(session: Session, start_id: str | None, target_id: str, target_depth: int) -> bool:
    if start_id is None:
        return False
    sql = """
    WITH RECURSIVE up(entry_id, parent_id, depth) AS (
        SELECT entry_id, parent_id, depth FROM sessions_app_entry WHERE session_id = %s AND entry_id = %s
        UNION ALL
        SELECT e.entry_id, e.parent_id, e.depth FROM sessions_app_entry e JOIN up
            ON e.session_id = %s AND e.entry_id = up.parent_id
        WHERE up.depth > %s
    ) SELECT 1 FROM up WHERE entry_id = %s"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk, start_id, session.pk, target_depth, target_id])
        return cursor.fetchone() is not None


# An entry to store: its object (possibly slimmed by piformat.slim), its exact line (or the parsed
# line that decodes it when needed), its row text.
Pending = tuple[dict[str, Any], "str | piformat.Line", str | None]


def _insert(
    session: Session, lines: list[Pending], author_id: int | None, known: dict[str, _Known] | None = None
) -> Entry | None:
    """Store entries (already validated; parents exist in the batch or the session) in list order.

    Computes each entry's depth and path state from its parent, parents first, so that reads never
    need to walk further than the context they build.
    """
    if not lines:
        return None
    batch = {p[0]["id"]: p[0] for p in lines}
    texts = {p[0]["id"]: p[1] for p in lines}
    seqs = {entry_id: session.last_seq + i for i, entry_id in enumerate(batch, start=1)}
    parents = {i: d["parentId"] for i, d in batch.items()}
    outside = {d["parentId"] for d in batch.values() if d["parentId"] is not None and d["parentId"] not in batch}
    known = {**(known or {}), **_stored_states(session, outside - set(known or ()))}
    kids: dict[str | None, list[str]] = {}
    for data in batch.values():
        kids.setdefault(data["parentId"], []).append(data["id"])
    computed: dict[str, _Known] = {}
    queue = deque(i for i, d in batch.items() if d["parentId"] is None or d["parentId"] not in batch)
    while queue:
        entry_id = queue.popleft()
        data = batch[entry_id]
        parent = data["parentId"]
        base = (computed.get(parent) or known.get(parent)) if parent is not None else None
        state = advance(base.state if base else PathState(), Node(entry_id, parent, data["type"], data))
        raw = texts[entry_id]
        text = raw if isinstance(raw, str) else raw.raw
        chain = entry_chain_hash(base.chain if base else None, seqs[entry_id], entry_id, text)
        computed[entry_id] = _Known(base.depth + 1 if base else 0, state, chain)
        queue.extend(kids.get(entry_id, ()))

    states: dict[int, StateJson] = {}
    now = timezone.now()
    created_at = connection.ops.adapt_datetimefield_value(now)  # once, not per row
    rows: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        for data, raw, preview in lines:
            session.last_seq += 1
            info = computed[data["id"]]
            cached = state_json(states, info.state)
            kept_from = _kept_from(session, data, parents, computed) if data["type"] == "compaction" else None
            rows.append(_row(session, data, raw, preview, info, cached, kept_from, author_id, created_at))
            update_listing(session, data)
            if len(rows) >= 2000:
                entry_insert.insert_rows(cursor, rows, vendor=connection.vendor)
                rows = []
        if len(lines) == 1:
            # A single append (the hot path) gets its row back as a model instance, no re-read.
            cursor.execute(entry_insert.statement(1, vendor=connection.vendor) + " RETURNING id", rows[0])
            entry = Entry.from_db(connection.alias, ["id", *entry_insert.COLUMNS], [cursor.fetchone()[0], *rows[0]])
            entry.created_at = now
            return entry
        entry_insert.insert_rows(cursor, rows, vendor=connection.vendor)
    return None


def _kept_from(
    session: Session, data: Mapping[str, Any], parents: Mapping[str, str | None], computed: Mapping[str, _Known]
) -> str | None:
    """The compaction's firstKeptEntryId if that entry is one of its ancestors, else None.

    parents and computed describe entries not stored yet; the walk goes on in the database."""
    target = data.get("firstKeptEntryId")
    if not isinstance(target, str):
        return None
    target_depth = computed[target].depth if target in computed else None
    if target_depth is None:
        stored = _stored_states(session, [target])
        if target not in stored:
            return None
        target_depth = stored[target].depth
    node: str | None = data["parentId"]
    while node is not None and node in parents:
        if node == target:
            return target
        if computed[node].depth <= target_depth:
            return None
        node = parents[node]
    return target if _is_stored_ancestor(session, node, target, target_depth) else None


def _locked(session: Session) -> Session:
    """Re-read the session under a write lock (SQLite: the IMMEDIATE transaction already holds it).

    SessionNotFound if it was deleted meanwhile (a writer that waited for the delete's lock).
    """
    # Raw SQL: this runs on every append, and the ORM's query building costs more than the query.
    # NO KEY UPDATE: it still serializes writers of this session, but does not block the key-share
    # locks that inserting rows referring to the session takes (audit records), which would deadlock
    # against a writer holding the audit chain's head.
    lock = " FOR NO KEY UPDATE" if connection.features.has_select_for_no_key_update else ""
    found = list(
        Session.objects.raw(f"SELECT * FROM sessions_app_session WHERE id = %s AND NOT deleting{lock}", [session.pk])
    )
    if not found:
        raise SessionNotFound()
    return found[0]


def _new_entry_id(session: Session) -> str:
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if not sel.entry_ids_present(session=session, ids=[candidate]):
            return candidate
    return str(uuid.uuid4())


def build_entry(payload: Mapping[str, Any], *, entry_id: str, parent_id: str | None, timestamp: str) -> dict[str, Any]:
    """An entry object in pi's key order; keys pi does not know are kept, after its own."""
    merged = {**payload, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    order = KEY_ORDER.get(str(payload.get("type")), BASE)
    entry = {k: merged[k] for k in order if k in merged and merged[k] is not UNSET}
    entry.update((k, v) for k, v in merged.items() if k not in entry and v is not UNSET)
    return entry


# --- session services --------------------------------------------------------------------


@transaction.atomic
def session_create(*, owner: User, name: str | None = None, cwd: str = "") -> Session:
    header: dict[str, Any] = {
        "type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": now_iso(), "cwd": cwd,
    }  # fmt: skip
    session = Session.objects.create(
        public_id=header["id"],
        owner=owner,
        header_raw=jsjson.dumps(header),
        cwd=cwd,
        created=header["timestamp"],
    )
    audit.audit_record(actor=owner, action="session.create", obj_type="session", obj_id=session.public_id)
    if name and name.strip():
        entry_append(session=session, payload={"type": "session_info", "name": name.strip()}, author=owner)
        session.refresh_from_db()
    return session


@transaction.atomic
def entry_append(
    *,
    session: Session,
    payload: Mapping[str, Any],
    parent_id: str | None = UNSET,
    author: User | None = None,
    move_leaf: bool = True,
) -> Entry:
    """Append one entry: a child of the leaf, or of parent_id (None = a new root), in pi's shape.

    payload holds the type and its fields; id and timestamp may be given, else they are made.
    """
    locked = _locked(session)
    parent = locked.leaf_id if parent_id is UNSET else parent_id
    # The parent's stored state doubles as the check that it exists. A parentId of the wrong type
    # is left to validate_entry (400 naming the field), not reported missing.
    parent_state = _stored_states(locked, [parent]) if isinstance(parent, str) else {}
    if isinstance(parent, str) and parent not in parent_state:
        raise EntryNotFound(f"Entry {parent} not found", parentId=parent)
    entry_id = payload.get("id")
    target = payload.get("targetId") if payload.get("type") == "label" else None
    present = sel.entry_ids_present(session=locked, ids=[i for i in (entry_id, target) if isinstance(i, str)])
    if entry_id is None:
        entry_id = _new_entry_id(locked)
    elif not isinstance(entry_id, str) or not entry_id:
        raise InvalidEntry("field 'id' must be a non-empty string", field="id")
    elif entry_id in present:
        raise SessionConflict(f"an entry with id {entry_id!r} already exists", field="id")
    timestamp = payload.get("timestamp", UNSET)
    data = build_entry(
        payload, entry_id=entry_id, parent_id=parent, timestamp=now_iso() if timestamp is UNSET else timestamp
    )
    problem = piformat.validate_entry(data)
    if problem is None and data["type"] == "label" and data["targetId"] not in present:
        raise EntryNotFound(f"Entry {data['targetId']} not found", targetId=data["targetId"])
    if problem is not None:
        raise InvalidEntry(problem)
    try:
        raw = jsjson.dumps(data, max_depth=settings.PIWEB_IMPORT_MAX_DEPTH)
    except jsjson.JSONDepthError:
        raise InvalidEntry(f"the entry nests deeper than {settings.PIWEB_IMPORT_MAX_DEPTH} levels") from None
    trail = _entry_trail(locked, data)  # "before" values, read before the insert
    entry = _insert(locked, [(data, raw, None)], author.pk if author is not None else None, known=parent_state)
    assert entry is not None
    prev_leaf = locked.leaf_id
    if move_leaf:
        locked.leaf_id = entry_id
    _save_fields(locked, _APPEND_FIELDS)
    _sync(session, locked)
    audit.audit_record(actor=author, **trail)
    events.publish_on_commit(
        locked,
        events.entry_event(
            locked, entry_id=entry_id, parent_id=parent, entry_type=data["type"], raw=raw, prev_leaf_id=prev_leaf
        ),
    )
    return entry


def _entry_trail(session: Session, data: Mapping[str, Any]) -> dict[str, Any]:
    """The audit record of an entry about to be appended (read before the insert, for "before")."""
    kind = data.get("type")
    base = {"obj_type": "entry", "obj_id": data["id"], "session": session.public_id}
    if kind == "session_info":
        return {**base, "action": "session.rename", "before": session.name, "after": data.get("name") or ""}
    if kind == "label":
        target = data.get("targetId")
        old = sel.labels(session=session).get(str(target))
        return {**base, "action": "label.set", "before": old, "after": data.get("label"), "extra": {"target": target}}
    return {**base, "action": "entry.append", "extra": {"type": kind, "parent": data.get("parentId")}}


# What an append changes on the session row (saving only these keeps the UPDATE small).
_APPEND_FIELDS = ["leaf_id", "name", "message_count", "first_message", "modified_ms", "last_seq",
                  "entries_digest", "updated_at"]  # fmt: skip


def _save_fields(session: Session, fields: list[str]) -> None:
    """session.save(update_fields=fields) without the ORM's per-call query building."""
    session.updated_at = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    values = [adapt(session.updated_at) if f == "updated_at" else getattr(session, f) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE sessions_app_session SET {', '.join(f'{f} = %s' for f in fields)} WHERE id = %s",
            [*values, session.pk],
        )


def _sync(target: Session, source: Session) -> None:
    """Let the caller's Session object see what the locked copy changed."""
    for f in Session._meta.concrete_fields:
        setattr(target, f.attname, getattr(source, f.attname))


@transaction.atomic
def leaf_move(*, session: Session, entry_id: str | None) -> Session:
    """pi's branch(id) / resetLeaf(): the next entry will be a child of entry_id (None: a new root)."""
    locked = _locked(session)
    if entry_id is not None:
        sel.entry_require(session=locked, entry_id=entry_id)
    before = locked.leaf_id
    locked.leaf_id = entry_id
    _save_fields(locked, ["leaf_id", "updated_at"])
    audit.audit_record(action="leaf.move", obj_type="session", obj_id=locked.public_id, before=before, after=entry_id)
    _sync(session, locked)
    events.publish_on_commit(locked, events.leaf_event(locked))
    return session


@transaction.atomic
def branch_with_summary(
    *,
    session: Session,
    entry_id: str | None,
    summary: str,
    details: Any = UNSET,
    from_hook: bool | None = None,
    author: User | None = None,
) -> Entry:
    """pi's branchWithSummary: move the leaf to entry_id, then hang a branch_summary there."""
    leaf_move(session=session, entry_id=entry_id)
    payload: dict[str, Any] = {"type": "branch_summary", "fromId": entry_id or "root", "summary": summary}
    if details is not UNSET:
        payload["details"] = details
    if from_hook is not None:
        payload["fromHook"] = from_hook
    return entry_append(session=session, payload=payload, author=author)


def label_set(*, session: Session, target_id: str, label: str | None, author: User | None = None) -> Entry:
    """Set (or, with an empty label, clear) a label: a label entry appended at the leaf."""
    payload: dict[str, Any] = {"type": "label", "targetId": target_id}
    text = (label or "").strip()
    if text:
        payload["label"] = text
    return entry_append(session=session, payload=payload, author=author)


def session_rename(*, session: Session, name: str, author: User | None = None) -> Entry:
    return entry_append(session=session, payload={"type": "session_info", "name": name.strip()}, author=author)


@transaction.atomic
def session_fork(*, session: Session, entry_id: str, owner: User) -> Session:
    """pi's createBranchedSession: a new session holding the path to entry_id (labels re-created)."""
    sel.entry_require(session=session, entry_id=entry_id)
    path, rechained = _path_without_labels(sel.path_nodes(session=session, leaf_id=entry_id))
    header: dict[str, Any] = {
        "type": "session",
        "version": 3,
        "id": str(uuid.uuid4()),
        "timestamp": now_iso(),
        "cwd": session.cwd,
    }
    if session.source_path:
        header["parentSession"] = session.source_path
    fork = Session.objects.create(
        public_id=header["id"],
        owner=owner,
        header_raw=jsjson.dumps(header),
        cwd=session.cwd,
        created=header["timestamp"],
        parent_session=session,
    )
    raws = dict(Entry.objects.filter(session=session, entry_id__in=[n.id for n in path]).values_list("entry_id", "raw"))
    _insert(fork, [(dict(n.data), jsjson.dumps(n.data) if n.id in rechained else raws[n.id], None) for n in path], None)
    fork.leaf_id = path[-1].id if path else None
    on_path = {n.id for n in path}
    set_at = _label_times(session)
    for target, label in sel.labels(session=session).items():
        if target in on_path:
            entry = build_entry(
                {"type": "label", "targetId": target, "label": label},
                entry_id=_new_entry_id(fork),
                parent_id=fork.leaf_id,
                timestamp=set_at.get(target) or now_iso(),
            )
            _insert(fork, [(entry, jsjson.dumps(entry), None)], owner.pk)
            fork.leaf_id = entry["id"]
    fork.save()
    audit.audit_record(
        actor=owner, action="session.fork", obj_type="session", obj_id=fork.public_id,
        extra={"from": session.public_id, "at": entry_id},
    )  # fmt: skip
    return fork


def _label_times(session: Session) -> dict[str, str]:
    """When each label in force was set (pi's labelTimestampsById): a fork's re-created label
    entries carry that timestamp, as pi's createBranchedSession writes them."""
    times: dict[str, str] = {}
    for raw in Entry.objects.filter(session=session, type="label").order_by("seq").values_list("raw", flat=True):
        data = jsjson.loads(raw)
        if data.get("label"):
            times[data["targetId"]] = data["timestamp"]
        else:
            times.pop(data["targetId"], None)
    return times


def _path_without_labels(path: list[Node]) -> tuple[list[Node], set[str]]:
    """The path minus its label entries, and the ids of the entries that had to change.

    pi (v0.58 and 0.73.1 alike) keeps the other lines as they were, so an entry whose parent was
    a label points at a line the fork does not have: an orphan that cuts the history off the
    context. piweb deliberately re-chains such an entry to the previous kept entry and moves a
    compaction's firstKeptEntryId off a dropped label onto the entry after it, so the fork keeps
    the context it was made from. Every other line stays byte-identical.
    """
    kept: list[Node] = []
    changed: set[str] = set()
    pending: list[str] = []  # dropped labels not yet followed by a kept entry
    replacement: dict[str, str] = {}
    parent: str | None = None
    for node in path:
        if node.type == "label":
            pending.append(node.id)
            continue
        replacement.update((label_id, node.id) for label_id in pending)
        pending.clear()
        data = dict(node.data)
        if data["parentId"] != parent:
            data["parentId"] = parent
            changed.add(node.id)
        first_kept = data.get("firstKeptEntryId")
        if node.type == "compaction" and isinstance(first_kept, str) and first_kept in replacement:
            data["firstKeptEntryId"] = replacement[first_kept]
            changed.add(node.id)
        kept.append(Node(node.id, parent, node.type, data))
        parent = node.id
    return kept, changed


@transaction.atomic
def session_delete(*, session: Session) -> None:
    """Remove a session and all its entries (the only way entries ever disappear)."""
    Session.objects.filter(pk=session.pk).update(deleting=True, leaf_id=None)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM sessions_app_entry WHERE session_id = %s", [session.pk])
    Session.objects.filter(pk=session.pk).delete()
    audit.audit_record(
        action="session.delete", obj_type="session", obj_id=session.public_id, extra={"name": session.name}
    )
    events.publish_on_commit(session, events.changed_event(session, "deleted"))


# --- import --------------------------------------------------------------------------------


@dataclass(slots=True)
class ImportResult:
    session: Session
    created: bool
    added: int
    skipped: list[piformat.Problem] = field(default_factory=list)
    version: int = piformat.CURRENT_VERSION
    worker_private_mb: float = 0.0  # the import worker's own memory at its end, when one built the rows


class _StoredLines(Mapping[str, str]):
    """The session's stored entry lines by id; raws fetched only for the ids asked about."""

    def __init__(self, session: Session | None, preload: bool) -> None:
        self.session = session
        self.raws: dict[str, str] = {}
        self.ids: set[str] = set()
        if session is not None:
            query = Entry.objects.filter(session=session)
            if preload:
                self.raws = dict(query.values_list("entry_id", "raw"))
                self.ids = set(self.raws)
            else:
                self.ids = set(query.values_list("entry_id", flat=True))

    def __contains__(self, key: object) -> bool:
        return key in self.ids

    def __getitem__(self, key: str) -> str:
        if key not in self.raws:
            if key not in self.ids or self.session is None:
                raise KeyError(key)
            self.raws[key] = Entry.objects.get(session=self.session, entry_id=key).raw
        return self.raws[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _peek_header_id(data: bytes) -> str | None:
    """The id in the header, the first non-blank line (as piformat.read_header finds it, however
    many blank lines come first), without copying the rest of the file."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        chunk = data[start:] if end < 0 else data[start:end]
        if chunk.strip():
            try:
                header = jsjson.loads(chunk)
            except ValueError:
                return None
            value = header.get("id") if isinstance(header, dict) else None
            return value if isinstance(value, str) and piformat.well_formed(value) else None
        if end < 0:
            return None
        start = end + 1


def session_import(
    *,
    owner: User,
    data: bytes,
    source_path: str = "",
    partial: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import a pi session file; re-importing adds only lines not stored yet.

    By default any problem rejects the whole file (ImportRejected lists them all, nothing is
    stored). With partial=True the valid part is imported and the skipped lines are reported.
    """
    limits = import_limits()
    session_id = _peek_header_id(data)
    with checkpoint.deferred(len(data)), transaction.atomic():
        existing = (
            Session.objects.select_for_update(no_key=True).filter(public_id=session_id).first() if session_id else None
        )
        if existing is not None:
            _require_reimport(owner, existing)
        if existing is None and not partial and _worker_worthwhile(data):
            outcome = _import_in_worker(
                owner=owner, data=data, source_path=source_path, limits=limits, progress=progress
            )
            if outcome is _RACED:
                return session_import(owner=owner, data=data, source_path=source_path, partial=partial)
            if isinstance(outcome, ImportResult):
                return outcome
        grown = _grown_tail(existing, data)
        known = _StoredLines(existing, preload=existing is not None and grown is None)
        # Without partial, lines are stored while the file is still being read (a rejected file
        # rolls them back); partial imports must see every problem before storing anything.
        stream = None if partial else _ImportStream(owner=owner, existing=existing, known=known)
        try:
            with gcpause.paused():
                parsed = _parse_for(existing, grown, data, limits, known, progress, stream)
        finally:
            if stream is not None:
                stream.close()
        if parsed.fatal or (parsed.problems and not partial):
            raise ImportRejected(
                f"{len(parsed.problems)} problem(s) in the file; nothing was imported",
                errors=[p.as_dict() for p in parsed.problems],
            )
        if stream is not None and stream.session_race:
            return session_import(owner=owner, data=data, source_path=source_path, partial=partial)
        created = existing is None
        assert parsed.header is not None
        if stream is not None and stream.session is not None:
            session = stream.session
        else:
            session = existing or _new_imported_session(owner, parsed.header, parsed.header_raw)
            if session._state.adding and not _saved_unless_raced(session):
                return session_import(owner=owner, data=data, source_path=source_path, partial=partial)
            with gcpause.paused():
                _insert(session, [(ln.data, ln, ln.preview) for ln in parsed.entries], owner.pk)
        if created or grown is not None:
            # Positions count the lines of what was parsed: the whole new file, or the new tail.
            # A changed file parsed whole again keeps the extra lines recorded the first time.
            before = session.last_seq - len(parsed.entries)
            session.extra_headers += [[before + local, raw] for local, raw in parsed.extra_headers]
        if parsed.entries or created:
            session.leaf_id = parsed.leaf_id if parsed.leaf_id is not None else session.leaf_id
        if parsed.problems:
            session.import_report = session.import_report + [p.as_dict() for p in parsed.problems]
        _imported(session, owner=owner, data=data, source_path=source_path, created=created, added=len(parsed.entries))
    return ImportResult(session, created, len(parsed.entries), parsed.problems, parsed.version)


def _require_reimport(user: User, session: Session) -> None:
    """Importing a file whose session is stored already updates it: its owner may, and so may a
    member of its team who may import there (any editor keeps a mirrored session up to date)."""
    if session.deleting:
        raise SessionConflict(f"session {session.public_id} is being deleted; import it again once it is gone")
    role = permissions.session_access(user, session)
    if role is None:
        raise SessionConflict(
            f"session {session.public_id} already exists in piweb under another account;"
            " its owner can move it to a team you are in"
        )
    if not permissions.can(role, "import"):
        raise SessionForbidden(
            f"session {session.public_id} is already in piweb, in a team where your role ({role}) may not import",
            need="import", role=str(role),
        )  # fmt: skip


ANALYZE_AFTER = 5000  # entries added by one import


def _imported(
    session: Session, *, owner: User, data: bytes, source_path: str, created: bool, added: int, sha256: str = ""
) -> None:
    """What every import ends with: the source recorded, the session saved, audit and events."""
    session.source_path = source_path or session.source_path
    session.source_bytes = len(data)
    session.source_sha256 = sha256 or hashlib.sha256(data).hexdigest()
    session.save(force_insert=session._state.adding)  # (new only when written after its entries)
    if added >= ANALYZE_AFTER and connection.vendor == "postgresql":
        # Fresh statistics, or PostgreSQL plans the path walks for an empty table.
        transaction.on_commit(_analyze_entries)
    if added and not created:
        events.publish_on_commit(session, events.changed_event(session, "import"))
    audit.audit_record(
        actor=owner, action="session.import", obj_type="session", obj_id=session.public_id,
        extra={"created": created, "bytes": len(data), "source": source_path},
    )  # fmt: skip


# --- large new files: rows built by a worker process ------------------------------------------

_RACED: Any = object()  # another import created the same session meanwhile


def _next_session_pk() -> int:
    """The id SQLite's AUTOINCREMENT would give the next session. The import's transaction is
    IMMEDIATE (settings: it holds the write lock from its start), so no other can take it first.

    Why the worker path writes the session's row after its entries, under this id: a page written
    at the start of a big transaction, pushed out to the WAL once the page cache fills, and written
    again at its end (the session's row and its indexes) is overwritten in place, and at COMMIT
    SQLite then re-reads and re-checksums every WAL frame after it: ~47k frames, ~100 ms of a 100k
    import. Written once, at the end, the row needs no such pass (the session foreign key is
    deferred to the commit)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sessions_app_session'), 0),"
            " coalesce((SELECT max(id) FROM sessions_app_session), 0)) + 1"
        )
        return int(cursor.fetchone()[0])


def _worker_worthwhile(data: bytes) -> bool:
    """Below PIWEB_IMPORT_WORKER_MIN_BYTES (negative: never) the file is parsed in this process:
    two processes pay off only once the rows take longer to build than a fork takes."""
    threshold = settings.PIWEB_IMPORT_WORKER_MIN_BYTES
    return WORKER_AVAILABLE and threshold >= 0 and len(data) >= threshold


def _import_in_worker(
    owner: User, data: bytes, *, source_path: str, limits: piformat.Limits, progress: Callable[[int], None] | None
) -> ImportResult | None:
    """Import a new v3 session with its rows built by import_worker, written here as they come.

    None when the worker hands the file back (a problem to report, an unusual order): nothing of
    it is kept, and the caller parses the file itself. _RACED as in _saved_unless_raced
    (PostgreSQL; on SQLite the session's id is reserved and its row written by _imported)."""
    header, problem = piformat.read_header(data, limits)
    if header is None or problem is not None or header.version != piformat.CURRENT_VERSION:
        return None
    if len(data) > limits.max_file_bytes:
        return None
    savepoint = transaction.savepoint()
    session = _new_imported_session(owner, header.obj, header.raw)
    if connection.vendor == "sqlite":
        session.pk = _next_session_pk()  # its row is written once, after the entries (_imported)
    elif not _saved_unless_raced(session):
        transaction.savepoint_rollback(savepoint)
        return _RACED  # type: ignore[no-any-return]
    job = worker.Job(
        session_pk=session.pk, author_id=owner.pk,
        created_at=connection.ops.adapt_datetimefield_value(timezone.now()), limits=limits,
        start=header.end, first_line=header.number,
    )  # fmt: skip
    key = _chain_key()
    summary, reported, digest = None, 0, ""
    chains: dict[str, str] = {}
    lines = memoryview(data)
    run = WorkerRun(job, data)
    # The file's hash in a thread (started after the fork): hashlib lets go of the GIL, and this
    # process mostly waits for the worker's first rows meanwhile.
    file_hash = hashlib.sha256()
    hasher = threading.Thread(target=file_hash.update, args=(data,), name="piweb-import-sha256")
    try:
        hasher.start()
        with gcpause.paused(), connection.cursor() as cursor:
            for kind, payload in run.messages():
                if kind == "rows":
                    digest = _with_lines(payload, lines, digest, key, chains)
                    entry_insert.insert_rows(cursor, payload, vendor=connection.vendor, raw_bytes=True)
                elif kind == "progress":
                    reported += payload
                    if progress is not None:
                        progress(payload)
                elif kind == "done":
                    summary = payload
                else:
                    log.info("import of %s: parsed in process instead (%s)", session.public_id, payload)
    finally:
        run.close()
        if hasher.ident is not None:  # started
            hasher.join()
    if summary is None:
        transaction.savepoint_rollback(savepoint)
        if progress is not None and reported:
            progress(-reported)  # the in-process parse reports the same bytes again
        return None
    transaction.savepoint_commit(savepoint)
    session.last_seq = summary.entries
    session.entries_digest = digest or None
    session.leaf_id = summary.leaf_id
    session.extra_headers = [[before, raw] for before, raw in summary.extra_headers]
    listing = summary.listing
    session.name, session.message_count = listing.name, listing.message_count
    session.first_message, session.modified_ms = listing.first_message, listing.modified_ms
    _imported(
        session, owner=owner, data=data, source_path=source_path, created=True, added=summary.entries,
        sha256=file_hash.hexdigest(),
    )  # fmt: skip
    return ImportResult(session, True, summary.entries, [], piformat.CURRENT_VERSION, summary.private_mb)


def _with_lines(rows: list[Any], lines: memoryview, digest: str, key: bytes, chains: dict[str, str]) -> str:
    """Complete the worker's rows in place: each line in place of its (start, end) offsets, its
    chain hash (chains: those of the entries before, by id, ~20 MB for 100k entries; the worker
    sends parents first). Returns the session's running digest after the rows."""
    for row in rows:
        start, end = row[8]
        row[8] = lines[start:end]
    return chainhash.hash_rows(key, rows, chains, digest)


def _analyze_entries() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sessions_app_entry")


def _saved_unless_raced(session: Session) -> bool:
    """Save a new imported session; False if another import of the same file committed it first
    (PostgreSQL; on SQLite imports queue up), so the caller imports into that one instead."""
    try:
        with transaction.atomic():
            session.save()
    except IntegrityError:
        if not Session.objects.filter(public_id=session.public_id).exists():
            raise
        return False
    return True


def _new_imported_session(owner: User, header: Mapping[str, Any], header_raw: str) -> Session:
    return Session(
        public_id=header["id"],
        owner=owner,
        header_raw=header_raw,
        cwd=cwd if isinstance(cwd := header.get("cwd"), str) else "",
        created=str(header.get("timestamp", "")),
    )


class _Writer:
    """Runs the import's INSERTs on a second thread. SQLite and psycopg release the GIL while
    they write, so reading the next lines overlaps with storing the previous ones. Uses the same
    database connection (and so the same transaction); one batch in flight at a time."""

    def __init__(self) -> None:
        connection.ensure_connection()
        self.raw = connection.connection
        self.vendor = connection.vendor
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="piweb-import")
        self.pending: Future[None] | None = None

    def submit(self, rows: list[tuple[Any, ...]]) -> None:
        self.wait()
        self.pending = self.pool.submit(self._write, rows)

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        cursor = self.raw.cursor()
        try:
            entry_insert.insert_rows(cursor, rows, vendor=self.vendor, qmark=self.vendor == "sqlite")
        finally:
            cursor.close()

    def wait(self) -> None:
        """Let the main thread use the connection (and see any write error)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self.pool.shutdown()


class _ImportStream:
    """Stores entries as piformat.parse reads them (its on_line hook), when each parent has been
    seen before its children, as in every file pi writes. Otherwise it gives up, undoes what it
    stored, and the import stores the parsed entries the ordinary way."""

    BATCH = 2000

    def __init__(self, *, owner: User, existing: Session | None, known: Mapping[str, str]) -> None:
        self.owner, self.known = owner, known
        self.session: Session | None = None
        self.existing = existing
        self.session_race = False
        self.broken = False
        self.savepoint: str | None = None
        self.writer: _Writer | None = None
        self.computed: dict[str, _Known] = {}
        self.parents: dict[str, str | None] = {}
        self.states: dict[int, StateJson] = {}
        self.rows: list[tuple[Any, ...]] = []
        self.created_at: Any = None

    def __call__(self, line: piformat.Line, parsed: piformat.ParsedFile) -> None:
        if self.broken or self.session_race:
            return
        data = line.data
        entry_id, parent = data["id"], data["parentId"]
        if entry_id in self.computed or entry_id in self.known:
            return  # a repeated or already stored line: the tree checks judge it
        if self.session is None and not self._start(parsed):
            return
        assert self.session is not None and self.writer is not None
        if parent is None:
            base = None
        elif parent in self.computed:
            base = self.computed[parent]
        elif parent in self.known:
            self.writer.wait()
            base = _stored_states(self.session, [parent])[parent]
        else:
            self._give_up()  # a child before its parent (or a dangling parent)
            return
        state = advance(base.state if base else PathState(), Node(entry_id, parent, data["type"], data))
        raw = line.raw
        chain = entry_chain_hash(base.chain if base else None, self.session.last_seq + 1, entry_id, raw)
        info = self.computed[entry_id] = _Known(base.depth + 1 if base else 0, state, chain)
        self.parents[entry_id] = parent
        kept_from = None
        if data["type"] == "compaction":
            self.writer.wait()
            kept_from = _kept_from(self.session, data, self.parents, self.computed)
        self.session.last_seq += 1
        columns = state_json(self.states, state)
        self.rows.append(
            _row(self.session, data, raw, line.preview, info, columns, kept_from, self.owner.pk, self.created_at)
        )
        update_listing(self.session, data)
        if len(self.rows) >= self.BATCH:
            self.writer.submit(self.rows)
            self.rows = []

    def _start(self, parsed: piformat.ParsedFile) -> bool:
        self.savepoint = transaction.savepoint()
        assert parsed.header is not None
        session = self.existing or _new_imported_session(self.owner, parsed.header, parsed.header_raw)
        if session._state.adding and not _saved_unless_raced(session):
            self.session_race = True
            return False
        self.session = session
        self.writer = _Writer()
        self.created_at = connection.ops.adapt_datetimefield_value(timezone.now())
        return True

    def _give_up(self) -> None:
        self.broken = True
        assert self.writer is not None
        self.writer.close()
        self.writer = None
        if self.savepoint is not None:
            transaction.savepoint_rollback(self.savepoint)
        if self.existing is not None:
            self.existing.refresh_from_db()
        self.session = None
        self.rows = []

    def close(self) -> None:
        if self.writer is not None:
            if self.rows:
                self.writer.submit(self.rows)
                self.rows = []
            self.writer.close()
            self.writer = None


def _row(
    session: Session,
    data: Mapping[str, Any],
    raw: str | piformat.Line,
    preview: str | None,
    info: _Known,
    columns: StateJson,
    kept_from: str | None,
    author_id: int | None,
    created_at: Any,
) -> tuple[Any, ...]:
    """One sessions_app_entry row, in entry_insert.COLUMNS order (session.last_seq already counts it)."""
    session.entries_digest = session_digest(session.entries_digest or "", info.chain)
    message = data.get("message") if data["type"] == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    return (
        session.pk, session.last_seq, data["id"], data["parentId"], data["type"],
        role if isinstance(role, str) else None, data["timestamp"], parse_timestamp_ms(data["timestamp"]) or 0,
        raw if isinstance(raw, str) else raw.raw, storable(row_text(data) if preview is None else preview),
        info.depth, columns[1], columns[2], info.state.compaction_id, kept_from, author_id, created_at,
        info.chain,
    )  # fmt: skip


def _grown_tail(existing: Session | None, data: bytes) -> tuple[bytes, int] | None:
    """(header line, lines before the tail) when data is the stored v3 file plus new lines."""
    if existing is None or not existing.source_bytes or len(data) < existing.source_bytes:
        return None
    prefix = data[: existing.source_bytes]
    if not prefix.endswith(b"\n") or hashlib.sha256(prefix).hexdigest() != existing.source_sha256:
        return None
    header_line = prefix.split(b"\n", 1)[0]
    try:
        header = jsjson.loads(header_line)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("version") != piformat.CURRENT_VERSION:
        return None  # v1/v2 ids come from a migration over the whole file
    return header_line, prefix.count(b"\n") - 1


def _parse_for(
    existing: Session | None,
    grown: tuple[bytes, int] | None,
    data: bytes,
    limits: piformat.Limits,
    known: Mapping[str, str],
    progress: Callable[[int], None] | None = None,
    on_line: Callable[[piformat.Line, piformat.ParsedFile], None] | None = None,
) -> piformat.ParsedFile:
    """Parse the file; for a file that only grew since its last import, parse just the new tail."""
    if grown is not None:
        header_line, skipped_lines = grown
        assert existing is not None
        parsed = piformat.parse(
            header_line + b"\n" + data[existing.source_bytes :],
            limits=limits,
            known=known,
            slim_data=True,
            progress=progress,
            on_line=on_line,
        )
        for i, p in enumerate(parsed.problems):
            if p.line > 1:
                parsed.problems[i] = piformat.Problem(p.line + skipped_lines, p.message)
        for ln in parsed.entries:
            ln.line += skipped_lines
        return parsed
    return piformat.parse(data, limits=limits, known=known, slim_data=True, progress=progress, on_line=on_line)
