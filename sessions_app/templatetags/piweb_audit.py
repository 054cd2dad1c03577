"""Template helpers for the audit log: a record's before/after as readable fields."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def fields(value: Any) -> list[tuple[str, str]]:
    """A before/after value as (key, value) pairs to show as "key: value" lines: a dict's items in
    its order, anything else as one unnamed value; nested values as compact JSON, never Python
    repr. Autoescaping applies in the template."""
    if value is None or value == {} or value == "":
        return []
    if isinstance(value, dict):
        return [(str(k), _text(v)) for k, v in value.items()]
    return [("", _text(value))]
