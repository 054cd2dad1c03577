"""The audit trail: who did what to which object, when, from where, under which request.

Every record is appended through `audit_record`. Records are append-only (database triggers, see
migration 0006) and hash-chained: each stores its place in one global, dense sequence, the
previous record's hash and its own HMAC-SHA256 (key: settings.PIWEB_CHAIN_KEY) over its canonical
content and that previous hash. `audit_verify` (manage.py verify_audit) recomputes the chain and
names the first record that was changed, removed or inserted; the one-row AuditHead, which every
writer locks, keeps the chain from forking and remembers the last record, so records cut off the
end are noticed as well. (Someone who can also rewrite the head can still cut off the end
unnoticed: ship `verify_audit` output, or the head hash, somewhere the database cannot reach.)

Where the request comes from: `request_context_middleware` gives each request an id (X-Request-ID
if the client sent a sane one, else a new uuid4, echoed in the response) and puts the request in
a context variable for the duration of the request. `audit_record` reads the actor, IP and request
id from it, so the write services call `audit_record(action=...)` themselves, inside their own
transaction, without taking a request argument. That was chosen over recording in each view
because the services are the one write path (htmx views, API, chat commands, the turn runner,
management commands): a new caller cannot forget the record, and a record exists exactly when its
write committed. Reads (opening a session, exports, API context) are recorded by the views, which
are the only place they happen. Code running outside a request (management commands, the turn
worker) records no IP or request id and, unless given one, no actor.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.utils.decorators import sync_and_async_middleware

from sessions_app.models import AuditHead, AuditRecord

# Actions piweb records. Others (membership.*, role.*, token.*, share.*) are welcome: action is
# free text, dotted "<object>.<verb>".
SESSION_ACTIONS = (
    "session.create",
    "session.import",
    "session.rename",
    "session.fork",
    "session.delete",
    "session.baseline",
    "session.open",
    "session.export",
    "session.context",
    "entry.append",
    "leaf.move",
    "label.set",
    "search",
)
SIGNIN_ACTIONS = (
    "signin.ok", "signin.failed", "signin.blocked", "signout", "password_reset.request", "password_reset.limited",
)  # fmt: skip
AUDIT_ACTIONS = ("audit.verify", "audit.export", "session.verify")

_current: ContextVar[HttpRequest | None] = ContextVar("piweb_audit_request", default=None)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


# --- request context -----------------------------------------------------------------------


def request_id(request: HttpRequest | None) -> str:
    return str(getattr(request, "id", "")) if request is not None else ""


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or with PIWEB_TRUSTED_PROXY_COUNT = n proxies in front
    the n-th address from the right of X-Forwarded-For (the one the outermost trusted proxy saw;
    anything left of it is client-supplied and can be forged). Normalized; "" if malformed."""
    candidate = request.META.get("REMOTE_ADDR", "")
    trusted = settings.PIWEB_TRUSTED_PROXY_COUNT
    if trusted > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= trusted:
            candidate = hops[-trusted]
    try:
        return ipaddress.ip_address(candidate).compressed
    except ValueError:
        return ""


def _begin(request: HttpRequest) -> Any:
    sent = request.headers.get("X-Request-ID", "")
    request.id = sent if _REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex  # type: ignore[attr-defined]
    return _current.set(request)


@sync_and_async_middleware
def request_context_middleware(
    get_response: Callable[[HttpRequest], Any],
) -> Callable[[HttpRequest], Any]:
    """Sets request.id, makes the request the audit context, echoes X-Request-ID."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            token = _begin(request)
            try:
                response: HttpResponseBase = await get_response(request)
            finally:
                _current.reset(token)
            response["X-Request-ID"] = request_id(request)
            return response

        markcoroutinefunction(async_middleware)
        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        token = _begin(request)
        try:
            response: HttpResponseBase = get_response(request)
        finally:
            _current.reset(token)
        response["X-Request-ID"] = request_id(request)
        return response

    return middleware


def current_request() -> HttpRequest | None:
    return _current.get()


# --- the chain ------------------------------------------------------------------------------


def _key() -> bytes:
    return str(settings.PIWEB_CHAIN_KEY).encode()


def canonical(
    seq: int,
    at: datetime,
    actor_id: int | None,
    actor_username: str,
    action: str,
    obj_type: str,
    obj_id: str,
    session_id: str,
    ip: str,
    request_id: str,
    before: Any,
    after: Any,
    extra: Any,
) -> bytes:
    """A record's content as hashed: a JSON array in field order, keys sorted, no spaces."""
    content = [
        seq, at.isoformat(), actor_id, actor_username, action, obj_type, obj_id, session_id, ip, request_id,
        before, after, extra,
    ]  # fmt: skip
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def record_hash(prev_hash: str, content: bytes) -> str:
    return hmac.new(_key(), prev_hash.encode() + b"\n" + content, hashlib.sha256).hexdigest()


def _plain(value: Any) -> Any:
    """value as the JSON column will give it back (so that what is hashed is what is stored)."""
    if value is None:
        return None
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _locked_head() -> AuditHead:
    head = AuditHead.objects.select_for_update().filter(pk=1).first()
    if head is None:
        # First record ever (or the head row is gone): continue from the last stored record.
        last = AuditRecord.objects.order_by("-seq").values_list("seq", "hash").first()
        seq, last_hash = last if last is not None else (0, "")
        AuditHead.objects.bulk_create([AuditHead(pk=1, seq=seq, hash=last_hash)], ignore_conflicts=True)
        head = AuditHead.objects.select_for_update().get(pk=1)
    return head


def _user(actor: Any) -> AbstractBaseUser | None:
    if actor is None or isinstance(actor, AnonymousUser) or not getattr(actor, "is_authenticated", False):
        return None
    return actor  # type: ignore[no-any-return]


def audit_record(
    *,
    actor: AbstractBaseUser | AnonymousUser | None = None,
    action: str,
    obj_type: str = "",
    obj_id: str = "",
    session: str = "",
    request: HttpRequest | None = None,
    before: Any = None,
    after: Any = None,
    extra: Mapping[str, Any] | None = None,
) -> AuditRecord:
    """Append one record to the audit chain (in the caller's transaction, if there is one).

    actor defaults to the signed-in user of request (default: the current request, see the module
    docstring); session is the public id of the session concerned, for filtering (defaults to
    obj_id for obj_type "session"). Writers queue on the chain head's row lock (on SQLite the
    IMMEDIATE transaction already serializes them), so seq is dense and the chain never forks.
    """
    request = request if request is not None else _current.get()
    user = _user(actor) or (_user(getattr(request, "user", None)) if request is not None else None)
    fields: dict[str, Any] = {
        "at": timezone.now(),
        "actor_id": user.pk if user is not None else None,
        "actor_username": user.get_username() if user is not None else "",
        "action": action,
        "obj_type": obj_type,
        "obj_id": str(obj_id),
        "session_id": str(session or (obj_id if obj_type == "session" else "")),
        "ip": client_ip(request) if request is not None else "",
        "request_id": request_id(request),
        "before": _plain(before),
        "after": _plain(after),
        "extra": _plain(dict(extra)) if extra else None,
    }
    # Plain SQL, three statements: the ORM's compile step cost more than the writes (bench_audit).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_HEAD_SQL[connection.vendor == "postgresql"])
        row = cursor.fetchone()
        head_seq, head_hash = row if row is not None else _new_head()
        seq = head_seq + 1
        digest = record_hash(head_hash, canonical(seq, **fields))
        record = AuditRecord(seq=seq, prev_hash=head_hash, hash=digest, **fields)
        cursor.execute(_INSERT_SQL[connection.vendor == "postgresql"], _insert_params(record))
        record.pk = cursor.fetchone()[0] if connection.vendor == "postgresql" else cursor.lastrowid
        record._state.adding = False
        cursor.execute("UPDATE sessions_app_audithead SET seq = %s, hash = %s WHERE id = 1", [seq, digest])
    return record


_HEAD_SQL = (
    "SELECT seq, hash FROM sessions_app_audithead WHERE id = 1",
    "SELECT seq, hash FROM sessions_app_audithead WHERE id = 1 FOR UPDATE",
)
_COLUMNS = (
    "seq, at, actor_id, actor_username, action, obj_type, obj_id, session_id, ip, request_id, before, after, extra,"
    " prev_hash, hash"
)
_INSERT_SQL = (
    f"INSERT INTO sessions_app_auditrecord ({_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})",
    f"INSERT INTO sessions_app_auditrecord ({_COLUMNS}) VALUES ({', '.join(['%s'] * 10)},"
    " %s::jsonb, %s::jsonb, %s::jsonb, %s, %s) RETURNING id",
)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _insert_params(r: AuditRecord) -> list[Any]:
    at = connection.ops.adapt_datetimefield_value(r.at)
    return [
        r.seq, at, r.actor_id, r.actor_username, r.action, r.obj_type, r.obj_id, r.session_id, r.ip, r.request_id,
        _json(r.before), _json(r.after), _json(r.extra), r.prev_hash, r.hash,
    ]  # fmt: skip


def _new_head() -> tuple[int, str]:
    head = _locked_head()
    return head.seq, head.hash


# --- verification -------------------------------------------------------------------------------

_FIELDS = (
    "seq", "at", "actor_id", "actor_username", "action", "obj_type", "obj_id", "session_id", "ip", "request_id",
    "before", "after", "extra", "prev_hash", "hash",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class AuditFinding:
    seq: int  # the first bad record's place in the chain
    message: str


@dataclass(frozen=True, slots=True)
class AuditReport:
    checked: int
    finding: AuditFinding | None


def _rows(chunk_size: int) -> Iterator[tuple[Any, ...]]:
    return AuditRecord.objects.order_by("seq").values_list(*_FIELDS).iterator(chunk_size=chunk_size)


def audit_verify(*, chunk_size: int = 5000) -> AuditReport:
    """Recompute the whole chain; the first record that was changed, removed or inserted, if any."""
    previous = ""
    expected = 1
    for row in _rows(chunk_size):
        seq, prev_hash, stored = row[0], row[-2], row[-1]
        if seq != expected:
            return AuditReport(expected - 1, AuditFinding(expected, f"record #{expected} was removed"))
        if not hmac.compare_digest(prev_hash, previous):
            message = f"record #{seq} does not follow record #{seq - 1}: records were removed, inserted or swapped"
            return AuditReport(expected - 1, AuditFinding(seq, message))
        if not hmac.compare_digest(stored, record_hash(previous, canonical(*row[:-2]))):
            return AuditReport(expected - 1, AuditFinding(seq, f"record #{seq} was changed or inserted"))
        previous = stored
        expected += 1
    last = expected - 1
    head = AuditHead.objects.filter(pk=1).values_list("seq", "hash").first()
    if head is not None:
        head_seq, head_hash = head
        if head_seq > last:
            return AuditReport(
                last, AuditFinding(last + 1, f"record #{last + 1} was removed (the last is #{head_seq})")
            )
        if head_seq < last:
            return AuditReport(last, AuditFinding(head_seq + 1, f"record #{head_seq + 1} was inserted after the head"))
        if not hmac.compare_digest(head_hash, previous):
            return AuditReport(last, AuditFinding(last, f"record #{last} is not the one the chain head recorded"))
    elif last:
        return AuditReport(last, AuditFinding(last + 1, "the chain head is missing"))
    return AuditReport(last, None)


# --- who may read it --------------------------------------------------------------------------

AUDITORS_GROUP = "auditors"


def is_auditor(user: Any) -> bool:
    """Superusers, members of the "auditors" group and users with sessions_app.view_auditrecord."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    if user.groups.filter(name=AUDITORS_GROUP).exists():
        return True
    return bool(user.has_perm("sessions_app.view_auditrecord"))


def auditor_grant(*, user: Any, actor: Any = None) -> bool:
    """Make user an auditor (the auditors group, made if missing); False if they were one. Recorded."""
    from django.contrib.auth.models import Group

    group, _ = Group.objects.get_or_create(name=AUDITORS_GROUP)
    if user.groups.filter(pk=group.pk).exists():
        return False
    user.groups.add(group)
    audit_record(actor=actor, action="auditor.grant", obj_type="user", obj_id=user.get_username())
    return True
