"""{{ c|review_comment }}: one comment of a review thread, drawn in Python (format_html) rather
than by a dozen template nodes: a page may hold a thousand of them (bench/bench_ui.py). The body is
its sanitised HTML, stored when it was written (store/reviews.py); everything else is escaped."""

from __future__ import annotations

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from sessions_app.models import ReviewComment

register = template.Library()


@register.filter
def review_comment(c: ReviewComment) -> SafeString:
    at = timezone.localtime(c.created_at)
    body = (
        mark_safe('<p class="muted tombstone">Comment deleted.</p>')
        if c.deleted_at
        else format_html('<div class="md">{}</div>', mark_safe(c.body_html))  # sanitised when written
    )
    edited = mark_safe(' <span class="muted small">(edited)</span>') if c.edited_at else ""
    return format_html(
        '<div class="comment{}" id="comment-{}">\n'
        '      <div class="comment-head"><span class="who">{}</span> '
        '<time class="muted small" datetime="{}">{}</time>{}\n'
        '        <a class="permalink" href="#comment-{}" title="Link to this comment">#</a></div>\n'
        "      {}\n"
        "    </div>",
        " reply" if c.parent_id else "", c.pk, c.author_username, at.isoformat(), at.strftime("%Y-%m-%d %H:%M"),
        edited, c.pk, body,
    )  # fmt: skip
