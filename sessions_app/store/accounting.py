"""Which sessions exist, and whose they are, according to the audit trail (access/audit.py).

Every session is made by a service that records it in the same transaction, with its owner:
"session.create", "session.fork", "session.import" (extra.created), or "session.baseline" for the
sessions stored before this check existed (migration 0008). Moving one to a team records the team
("session.team_set"); only session_delete removes one, and records "session.delete". Replaying
those records gives every session that must exist with its owner and team. A session deleted by
SQL, one added by SQL, or one whose owner or team was changed by SQL disagrees with the trail.
The trail cannot be edited to hide that without breaking its own hash chain, which verify_audit
checks.

The owner is the record's after.owner (user id); records written before it was recorded name the
owner as their actor, which the services always made the owner.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from sessions_app.access import audit
from sessions_app.models import AuditRecord, Session
from sessions_app.store.batches import in_batches

CREATED = ("session.create", "session.fork", "session.import", "session.baseline")
ACTIONS = (*CREATED, "session.team_set", "session.delete")


@dataclass(frozen=True, slots=True)
class Owned:
    record: int  # the seq of the audit record that made the session
    owner_id: int | None
    team: str | None  # the team's public id


@dataclass(frozen=True, slots=True)
class Discrepancy:
    message: str
    column: str = ""
    stored: Any = None
    expected: Any = None


Record = tuple[int, str, str, int | None, Any, Any]  # seq, action, obj_id, actor_id, after, extra


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else None


def _public(team: Any) -> str | None:
    """A team's public id as the audit trail records it (None: a personal session)."""
    return None if team is None else str(team)


def audited(records: Iterable[Record]) -> dict[str, Owned | None]:
    """Each session the records name (in seq order): its owner and team, or None once deleted."""
    state: dict[str, Owned | None] = {}
    for seq, action, obj_id, actor_id, after, extra in records:
        if action == "session.delete":
            state[obj_id] = None
        elif action == "session.team_set":
            current = state.get(obj_id)
            if current is not None:
                state[obj_id] = replace(current, team=_field(after, "team"))
        elif action != "session.import" or _field(extra, "created"):
            owner = after["owner"] if isinstance(after, Mapping) and "owner" in after else actor_id
            state[obj_id] = Owned(seq, owner, _field(after, "team"))
    return state


def _records(public_ids: list[str] | None = None) -> Iterator[Record]:
    records = AuditRecord.objects.filter(action__in=ACTIONS, obj_type="session")
    if public_ids is not None:
        records = records.filter(session_id__in=public_ids)
    fields = ("seq", "action", "obj_id", "actor_id", "after", "extra")
    return records.order_by("seq").values_list(*fields).iterator(chunk_size=5000)


def _stored(public_ids: list[str] | None = None) -> dict[str, tuple[int, str | None]]:
    # (not an import's staging session: it is audited when it is published)
    sessions = Session.objects.filter(staging__isnull=True)
    if public_ids is not None:
        sessions = sessions.filter(public_id__in=public_ids)
    found = sessions.values_list("public_id", "owner_id", "team__public_id").iterator(chunk_size=5000)
    return {public_id: (owner_id, _public(team)) for public_id, owner_id, team in found}


def _compare(
    audit_says: Mapping[str, Owned | None], stored: Mapping[str, tuple[int, str | None]]
) -> dict[str, list[Discrepancy]]:
    found: dict[str, list[Discrepancy]] = {}
    for public_id, owned in audit_says.items():
        if owned is None:
            if public_id in stored:
                found[public_id] = [Discrepancy("the audit trail says it was deleted, yet it is stored")]
            continue
        if public_id not in stored:
            message = f"deleted outside piweb: audit record #{owned.record} made it, no record deleted it"
            found[public_id] = [Discrepancy(message)]
            continue
        owner_id, team = stored[public_id]
        differences = []
        if owner_id != owned.owner_id:
            message = f"its owner is user #{owner_id}, the audit trail says user #{owned.owner_id}"
            differences.append(Discrepancy(message, "owner_id", owner_id, owned.owner_id))
        if team != owned.team:
            message = f"its team is {team}, the audit trail says {owned.team}"
            differences.append(Discrepancy(message, "team", team, owned.team))
        if differences:
            found[public_id] = differences
    for public_id in stored.keys() - audit_says.keys():
        found[public_id] = [Discrepancy("added outside piweb: no audit record made it")]
    return found


def ownership_check(public_ids: list[str] | None = None) -> dict[str, list[Discrepancy]]:
    """What disagrees with the audit trail, by session public id (of all sessions, or of these).
    A session made or deleted while the two were read would look wrong once: those found are read
    again, both sides, and only what still disagrees is kept."""
    found = _compare(audited(_records(public_ids)), _stored(public_ids))
    if not found:
        return {}

    def again(ids: list[str]) -> list[tuple[str, list[Discrepancy]]]:
        return list(_compare(audited(_records(ids)), _stored(ids)).items())

    return dict(in_batches(sorted(found), again))


def sessions_baseline() -> int:
    """Record every stored session the audit trail has never named ("session.baseline", with its
    owner and team): sessions stored before it began. How many were recorded."""
    known = audited(_records())
    recorded = 0
    # (no filter on later columns, such as staging: migration 0008 runs this before they exist)
    for public_id, owner_id, team in Session.objects.order_by("pk").values_list(
        "public_id", "owner_id", "team__public_id"
    ):
        if public_id not in known:
            after = {"owner": owner_id, "team": _public(team)}
            audit.audit_record(action="session.baseline", obj_type="session", obj_id=public_id, after=after)
            recorded += 1
    return recorded
