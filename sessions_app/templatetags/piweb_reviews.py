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


@register.simple_tag(takes_context=True)
def review_thread(context: template.Context, thread: list[ReviewComment], entry_id: str) -> SafeString:
    """A whole thread (its comments, then its forms for a reviewer), drawn in Python for the same
    reason as review_comment: a page may hold 250 threads of 1,000 comments (bench/bench_ui.py)."""
    root = thread[0]
    parts = [f'<div class="thread{" resolved" if root.resolved else ""}" data-thread="{int(root.pk)}">']
    parts.extend(review_comment(c) for c in thread)
    if root.resolved:
        parts.append('<p class="muted small">Resolved.</p>')
    can = context.get("can") or {}
    if can.get("review"):
        parts.append(thread_controls(context, root, entry_id))
    parts.append("</div>")
    return mark_safe("\n".join(parts))


def thread_controls(context: template.Context, root: ReviewComment, entry_id: str) -> SafeString:
    """A thread's Reply and Resolve/Reopen forms. The URLs come from threads.html, reversed once."""
    token = escape(str(context.get("csrf_token", "")))
    csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
    comment_url, resolve_url = escape(context["comment_url"]), escape(context["resolve_url"])
    target = 'hx-target="closest section.threads" hx-swap="outerHTML"'
    pk = int(root.pk)
    action, label, value = ("reopen", "Reopen", "0") if root.resolved else ("resolve", "Resolve", "1")
    return mark_safe(
        '<details class="reply-pop"><summary class="act" data-action="reply">Reply</summary>\n'
        f'      <form method="post" action="{comment_url}" hx-post="{comment_url}" {target}>{csrf}\n'
        f'        <input type="hidden" name="entry" value="{escape(entry_id)}">'
        f'<input type="hidden" name="parent" value="{pk}">\n'
        '        <textarea name="body" rows="2" aria-label="Reply" required maxlength="20000"></textarea>\n'
        '        <button class="btn small primary">Reply</button>\n'
        "      </form>\n"
        "    </details>\n"
        f'    <form method="post" action="{resolve_url}" hx-post="{resolve_url}" {target} class="inline">{csrf}\n'
        f'      <input type="hidden" name="comment" value="{pk}">'
        f'<input type="hidden" name="resolved" value="{value}">\n'
        f'      <button class="act" data-action="{action}">{label}</button>\n'
        "    </form>"
    )
