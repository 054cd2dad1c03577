"""Template helpers for the top bar: who sees the Audit link, which section is current."""

from __future__ import annotations

from typing import Any

from django import template
from django.contrib.auth.models import Permission, User
from django.db.models import Q

from sessions_app.access import audit

register = template.Library()


@register.filter
def may_audit(user: Any) -> bool:
    """Whether the user may open /audit/: audit.is_auditor's rule (superuser, the auditors group,
    the view-audit permission directly or through a group) in at most one query, as the top bar
    is on every page. The auditor pages themselves still check with audit.is_auditor."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    perm = Permission.objects.filter(codename="view_auditrecord", content_type__app_label="sessions_app")
    allowed = Q(groups__name=audit.AUDITORS_GROUP) | Q(user_permissions__in=perm) | Q(groups__permissions__in=perm)
    return User.objects.filter(pk=user.pk).filter(allowed).exists()


@register.filter
def in_section(path: str, prefix: str) -> bool:
    """True when path is under prefix ("/" only matches the session pages)."""
    if prefix == "/":
        return path == "/" or path.startswith("/sessions/") or path.startswith("/import/")
    return path.startswith(prefix)


@register.filter
def thousands(value: int) -> str:
    """12,345: token counts and message numbers."""
    return f"{value:,}"
