"""Writes. The only code that adds entries or changes a session; browser and API both call it.

Every change is an appended entry (pi's model), except moving the leaf, which pi keeps in memory and
piweb persists on the session row.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.signals import setting_changed
from django.db import connection, transaction
from django.dispatch import receiver
from django.utils import timezone

from sessions_app import events
from sessions_app.access import audit
from sessions_app.core import chain as chainhash
from sessions_app.core import jsjson, piformat
from sessions_app.core.clock import now_iso
from sessions_app.core.intake import Intake
from sessions_app.core.tree import Node
from sessions_app.errors import EntryNotFound, InvalidEntry, SessionConflict, SessionNotFound
from sessions_app.models import Entry, Session
from sessions_app.store import rows, search_index
from sessions_app.store import selectors as sel
from sessions_app.store.batches import in_batches
from sessions_app.store.stored_tree import DbTree

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


# --- the one insert path -------------------------------------------------------------------


def entry_chain_hash(parent_chain: str | None, seq: int, entry_id: str, raw: str | bytes) -> str:
    """See chain.entry_chain_hash; the key is settings.PIWEB_CHAIN_KEY."""
    line = raw.encode() if isinstance(raw, str) else raw
    return chainhash.entry_chain_hash(chain_key(), parent_chain, seq, entry_id, line)


def session_digest(previous: str, chain_hash: str) -> str:
    return chainhash.session_digest(chain_key(), previous, chain_hash)


_KEY: list[bytes] = []  # settings.PIWEB_CHAIN_KEY as bytes, read once: this runs per stored entry


def chain_key() -> bytes:
    if not _KEY:
        _KEY.append(str(settings.PIWEB_CHAIN_KEY).encode())
    return _KEY[0]


@receiver(setting_changed)
def _chain_key_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("PIWEB_CHAIN_KEY", "SECRET_KEY"):
        _KEY.clear()


def _store(session: Session, lines: list[piformat.Line], author_id: int | None, tree: DbTree) -> Entry | None:
    """Store valid entries whose parents (and label targets) are stored or come before them; the
    session's seq, digest and listing fields follow. One entry comes back as its model instance
    (the append's hot path: no read back)."""
    intake = Intake(first_seq=session.last_seq + 1, stored=tree, listing=session)
    placed = [p for line in lines if (p := intake.add(line)) is not None]
    placed += intake.finish()
    assert not intake.problems, intake.problems  # the callers validated the entries
    now = timezone.now()
    created_at = connection.ops.adapt_datetimefield_value(now)  # once, not per row
    states: dict[int, Any] = {}
    batch = [rows.entry_row(p, p.line.raw, session.pk, author_id, created_at, states) for p in placed]
    session.entries_digest = rows.hash_rows(chain_key(), batch, tree.chains, session.entries_digest or "")
    session.last_seq += len(batch)
    tree.stored(placed)
    with connection.cursor() as cursor:
        if len(batch) == 1:
            cursor.execute(rows.statement(1, vendor=connection.vendor) + " RETURNING id", batch[0])
            entry = Entry.from_db(connection.alias, ["id", *rows.COLUMNS], [cursor.fetchone()[0], *batch[0]])
            entry.created_at = now
        else:
            entry = None
            rows.insert_rows(cursor, batch, vendor=connection.vendor)
    search_index.index_new(session, after=session.last_seq - len(batch))
    return entry


def _line(data: dict[str, Any], raw: str) -> piformat.Line:
    """An entry to store (validated) with its exact line."""
    text = raw.encode()
    line = piformat.entry_line(text, 0, len(text), data)
    assert isinstance(line, piformat.Line), line
    return line


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
        Session.objects.raw(
            f"SELECT * FROM sessions_app_session WHERE id = %s AND NOT deleting AND staging IS NULL{lock}",
            [session.pk],
        )
    )
    if not found:
        raise SessionNotFound()
    return found[0]


def _new_entry_id(session: Session, taken: Collection[str] = ()) -> str:
    """An 8-hex-digit id, as pi makes them, that neither the session nor `taken` holds."""
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken and not sel.entry_ids_present(session=session, ids=[candidate]):
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
def session_create(*, owner: User, name: str | None = None, cwd: str = "", created: str | None = None) -> Session:
    """A new empty session (its header made as pi makes it; created: its timestamp, default now)."""
    header: dict[str, Any] = {
        "type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": created or now_iso(), "cwd": cwd,
    }  # fmt: skip
    session = Session.objects.create(
        public_id=header["id"],
        owner=owner,
        header_raw=jsjson.dumps(header),
        cwd=cwd,
        created=header["timestamp"],
    )
    audit.audit_record(
        actor=owner, action="session.create", obj_type="session", obj_id=session.public_id, after={"owner": owner.pk}
    )
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
    target = payload.get("targetId") if payload.get("type") == "label" else None
    for field, value in (("id", payload.get("id")), ("parentId", parent_id), ("targetId", target)):
        # before any lookup by them (PostgreSQL refuses a NUL even in a query)
        if isinstance(value, str) and (problem := piformat.id_problem(field, value)) is not None:
            raise InvalidEntry(problem, field=field)
    locked = _locked(session)
    parent = locked.leaf_id if parent_id is UNSET else parent_id
    # The parent's stored state doubles as the check that it exists. A parentId of the wrong type
    # is left to validate_entry (400 naming the field), not reported missing.
    tree = DbTree(locked)
    if isinstance(parent, str) and parent not in tree.known([parent]):
        raise EntryNotFound(f"Entry {parent} not found", parentId=parent)
    entry_id = payload.get("id")
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
    tree.note(present=present, absent=[entry_id])
    entry = _store(locked, [_line(data, raw)], author.pk if author is not None else None, tree)
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
_APPEND_FIELDS = ["leaf_id", "name", "message_count", "first_message", "modified_ms", "cost", "total_tokens",
                  "last_seq", "entries_digest", "updated_at"]  # fmt: skip


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
    stored = Entry.objects.filter(session=session)
    ids = [n.id for n in path]
    raws = dict(in_batches(ids, lambda part: stored.filter(entry_id__in=part).values_list("entry_id", "raw")))
    tree = DbTree(fork)
    _store(
        fork, [_line(dict(n.data), jsjson.dumps(n.data) if n.id in rechained else raws[n.id]) for n in path], None, tree
    )
    fork.leaf_id = path[-1].id if path else None
    on_path = {n.id for n in path}
    labels: list[piformat.Line] = []
    for target, in_force in sel.label_entries_in_force(session=session).items():
        if target in on_path:
            # pi's createBranchedSession: re-created when they were set (labelTimestampsById).
            entry = build_entry(
                {"type": "label", "targetId": target, "label": in_force["label"]},
                entry_id=_new_entry_id(fork, taken={ln.id for ln in labels}),
                parent_id=fork.leaf_id,
                timestamp=in_force.get("timestamp") or now_iso(),
            )
            labels.append(_line(entry, jsjson.dumps(entry)))
            fork.leaf_id = entry["id"]
    _store(fork, labels, owner.pk, tree)
    fork.save()
    audit.audit_record(
        actor=owner, action="session.fork", obj_type="session", obj_id=fork.public_id, after={"owner": owner.pk},
        extra={"from": session.public_id, "at": entry_id},
    )  # fmt: skip
    return fork


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


def _delete_whole(session_pk: int) -> None:
    """The one delete path: a session and all its entries (the only way entries ever disappear).

    The session row goes first: the entry trigger (migration 0007) lets entries be deleted only
    once their session row is gone (the foreign keys are checked at commit). Then Django's
    cascade does the rest (turns, viewers, share links; forks keep their entries, their
    parent_session is cleared), finding no entries left."""
    with connection.cursor() as cursor:
        # Review rows first, in dependency order: with the session row already gone, Django's
        # cascade below does not reach them (a dangling key then fails the commit).
        for sql in _REVIEW_DELETES:
            cursor.execute(sql, [session_pk])
        cursor.execute("DELETE FROM sessions_app_session WHERE id = %s", [session_pk])
        cursor.execute("DELETE FROM sessions_app_entry WHERE session_id = %s", [session_pk])
    search_index.delete_session(session_pk)
    Session(pk=session_pk).delete()


_REVIEW_DELETES = (
    "DELETE FROM sessions_app_reviewrequest WHERE session_id = %s",
    "DELETE FROM sessions_app_verdict WHERE session_id = %s",
    "DELETE FROM sessions_app_reviewcomment WHERE session_id = %s AND parent_id IS NOT NULL",  # replies first
    "DELETE FROM sessions_app_reviewcomment WHERE session_id = %s",
)


@transaction.atomic
def session_delete(*, session: Session) -> None:
    """Remove a session and all its entries."""
    _delete_whole(session.pk)
    audit.audit_record(
        action="session.delete", obj_type="session", obj_id=session.public_id, extra={"name": session.name}
    )
    events.publish_on_commit(session, events.changed_event(session, "deleted"))


@transaction.atomic
def staging_discard(*, session_pk: int) -> bool:
    """Delete an import's staging session whole (store/importing/pipeline.py), through the one
    delete path: a failed import's rows are never deleted one by one. Not audited and no event:
    no reader ever saw it. False if it is not (or no longer) a staging session."""
    if not Session.objects.filter(pk=session_pk, staging=True).exists():
        return False
    _delete_whole(session_pk)
    return True


def staging_discard_stale(*, older_than_s: float | None = None) -> int:
    """Delete the staging sessions of imports that stopped (a crash, a killed process): those
    untouched for PIWEB_IMPORT_STALE_SECONDS (an import touches its staging session with every
    commit: at least every few seconds). Run by the janitor (live/streaming.py); returns how many went."""
    age = settings.PIWEB_IMPORT_STALE_SECONDS if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=age)
    stale = Session.objects.filter(staging=True, updated_at__lt=cutoff).values_list("pk", flat=True)
    gone = sum(staging_discard(session_pk=pk) for pk in list(stale))
    if gone:
        log.info("deleted %s staging session(s) of imports that stopped", gone)
    return gone
