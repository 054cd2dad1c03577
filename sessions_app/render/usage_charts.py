"""Inline SVG charts of a session's usage, drawn on the server: no script and no library (the CSP
allows neither inline scripts nor a CDN). Every text in them goes through format_html."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT, PAD = 640, 180, 36
MAX_POINTS = 400  # a line of more points than pixels would only weigh more


@dataclass(frozen=True, slots=True)
class Bar:
    label: str  # shown on hover (the SVG title)
    value: float
    marked: bool = False  # drawn in the accent colour (the current branch)


def money(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def bars(items: Sequence[Bar], *, title: str) -> SafeString:
    """A bar per item, left to right, scaled to the largest value."""
    if not items:
        return format_html('<p class="muted small">{}</p>', "Nothing to chart.")
    top = max(b.value for b in items) or 1.0
    inner = WIDTH - 2 * PAD
    step = inner / len(items)
    width = max(step * 0.8, 1.0)
    rects = format_html_join(
        "",
        '<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>',
        (
            (
                "bar current" if b.marked else "bar",
                f"{PAD + i * step:.1f}",
                f"{HEIGHT - PAD - (HEIGHT - 2 * PAD) * b.value / top:.1f}",
                f"{width:.1f}",
                f"{(HEIGHT - 2 * PAD) * b.value / top:.1f}",
                f"{b.label}: {money(b.value)}",
            )
            for i, b in enumerate(items)
        ),
    )
    return _frame(title, rects, money(top), "$0")


def line(values: Sequence[float], *, title: str) -> SafeString:
    """A line through the values in order (evenly spaced), from 0 to the largest."""
    if not values:
        return format_html('<p class="muted small">{}</p>', "Nothing to chart.")
    stride = max(1, -(-len(values) // MAX_POINTS))
    shown = list(values[::stride])
    top = max(shown) or 1.0
    inner = WIDTH - 2 * PAD
    step = inner / max(len(shown) - 1, 1)
    points = " ".join(
        f"{PAD + i * step:.1f},{HEIGHT - PAD - (HEIGHT - 2 * PAD) * v / top:.1f}" for i, v in enumerate(shown)
    )
    body = format_html('<polyline class="line" points="{}"><title>{}</title></polyline>', points, title)
    return _frame(title, body, f"{top:,.0f}", "0")


def _frame(title: str, body: SafeString, top_label: str, bottom_label: str) -> SafeString:
    return format_html(
        '<svg class="usage-chart" viewBox="0 0 {} {}" role="img" aria-label="{}">'
        '<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"></line>'
        '<text class="tick" x="2" y="{}">{}</text><text class="tick" x="2" y="{}">{}</text>{}</svg>',
        WIDTH, HEIGHT, title,
        PAD, HEIGHT - PAD, WIDTH - PAD, HEIGHT - PAD,
        PAD - 4, top_label, HEIGHT - PAD, bottom_label, body,
    )  # fmt: skip
