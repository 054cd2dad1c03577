"""{{ s.id|dom_id:"e" }}: an entry's element id (core/entryids.dom_id), safe for any entry id."""

from __future__ import annotations

from django import template

from sessions_app.core import entryids

register = template.Library()


@register.filter
def dom_id(entry_id: str, prefix: str) -> str:
    return entryids.dom_id(entry_id, prefix)
