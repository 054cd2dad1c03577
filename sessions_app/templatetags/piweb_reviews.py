"""{{ c|review_comment }}: one comment of a review thread, drawn in Python rather
than by a dozen template nodes: a page may hold a thousand of them (bench/bench_ui.py). The body is
its sanitised HTML, stored when it was written (store/reviews.py); everything else is escaped."""

from __future__ import annotations

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from sessions_app.models import ReviewComment

register = template.Library()


@register.filter
def review_comment(c: ReviewComment) -> SafeString:
    at = timezone.localtime(c.created_at)
    reply = " reply" if c.parent_id else ""
    edited = ' <span class="muted small">(edited)</span>' if c.edited_at else ""
    # body_html was sanitised when written; the author's name is the one text to escape here.
    body = '<p class="muted tombstone">Comment deleted.</p>' if c.deleted_at else f'<div class="md">{c.body_html}</div>'
    return mark_safe(
        f'<div class="comment{reply}" id="comment-{int(c.pk)}">\n'
        f'      <div class="comment-head"><span class="who">{escape(c.author_username)}</span> '
        f'<time class="muted small" datetime="{at.isoformat()}">{at:%Y-%m-%d %H:%M}</time>{edited}\n'
        f'        <a class="permalink" href="#comment-{int(c.pk)}" title="Link to this comment">#</a></div>\n'
        f"      {body}\n"
        "    </div>"
    )
