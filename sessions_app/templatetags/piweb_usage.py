"""Filters for usage figures: dollars and token counts as people read them."""

from __future__ import annotations

from django import template

from sessions_app.render.usage_charts import money as _money

register = template.Library()


@register.filter
def money(value: float | int | None) -> str:
    return _money(float(value or 0))


@register.filter
def tokens(value: float | int | None) -> str:
    """12,345 (or 1.2M past a million)."""
    n = float(value or 0)
    return f"{n / 1e6:,.1f}M" if n >= 1e6 else f"{n:,.0f}"
