"""Template helpers for the top bar: who sees the Audit link, which section is current."""

from __future__ import annotations

from typing import Any

from django import template

from sessions_app import audit

register = template.Library()


@register.filter
def may_audit(user: Any) -> bool:
    """Whether the user may open /audit/ (the same check as the auditor pages)."""
    return audit.is_auditor(user)


@register.filter
def in_section(path: str, prefix: str) -> bool:
    """True when path is under prefix ("/" only matches the session pages)."""
    if prefix == "/":
        return path == "/" or path.startswith("/sessions/") or path.startswith("/import/")
    return path.startswith(prefix)
