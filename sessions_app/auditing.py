"""One call site shape for permission events (membership, roles, tokens, shares, share views).

sessions_app.audit (the audit log) is built separately; until it exists this records nothing.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

log = logging.getLogger(__name__)


def audit(action: str, *, actor: Any, **data: Any) -> None:
    try:
        module = importlib.import_module("sessions_app.audit")
    except ImportError:
        log.debug("audit %s by %s: %s", action, actor, data)
        return
    module.audit_record(action=action, actor=actor, **data)
