"""Audit records written, forged and located for the audit tests."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from sessions_app.access.audit import audit_record, audit_verify
from sessions_app.models import AuditRecord


def write_records(n: int, **fields: Any) -> None:
    for i in range(n):
        audit_record(
            action=("entry.append", "leaf.move", "label.set", "session.open")[i % 4],
            obj_type="session", obj_id=f"s-{i % 37}", before={"n": i} if i % 3 else None, after=f"v{i}",
            extra={"i": i, "text": "ünïcode"} if i % 5 else None, **fields,
        )  # fmt: skip


def forged_hash(content: str) -> str:
    return hmac.new(b"not-the-key", content.encode(), hashlib.sha256).hexdigest()


def bad_seq() -> int:
    finding = audit_verify().finding
    assert finding is not None
    return finding.seq


def last_seq() -> int:
    return AuditRecord.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
