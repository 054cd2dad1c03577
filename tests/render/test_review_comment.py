"""The review_comment filter draws a comment as the template it replaced did (a page may hold a
thousand comments: drawing each with a dozen template nodes cost more than the rest of the page)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.template import Context, Template

from sessions_app.models import ReviewComment

BEFORE = Template(
    """{% for c in thread %}
    <div class="comment{% if c.parent_id %} reply{% endif %}" id="comment-{{ c.pk }}">
      <div class="comment-head"><span class="who">{{ c.author_username }}</span> <time class="muted small" datetime="{{ c.created_at|date:'c' }}">{{ c.created_at|date:"Y-m-d H:i" }}</time>{% if c.edited_at %} <span class="muted small">(edited)</span>{% endif %}
        <a class="permalink" href="#comment-{{ c.pk }}" title="Link to this comment">#</a></div>
      {% if c.deleted_at %}<p class="muted tombstone">Comment deleted.</p>{% else %}<div class="md">{{ c.body_html|safe }}</div>{% endif %}
    </div>{% endfor %}"""  # noqa: E501
)
AFTER = Template("{% load piweb_reviews %}{% for c in thread %}\n    {{ c|review_comment }}{% endfor %}")


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin"])
def test_the_filter_draws_what_the_template_drew(settings, tz):
    settings.TIME_ZONE = tz
    at = datetime(2026, 1, 5, 9, 30, 12, 345678, tzinfo=UTC)
    thread = [
        ReviewComment(pk=7, entry_id="e", author_username="<b>eve</b>", body_html="<p>hi <em>there</em></p>",
                      created_at=at),
        ReviewComment(pk=8, entry_id="e", parent_id=7, author_username="bob", body_html="<p>x</p>", created_at=at,
                      edited_at=at),
        ReviewComment(pk=9, entry_id="e", parent_id=7, author_username="bob", body_html="", created_at=at,
                      deleted_at=at),
    ]  # fmt: skip
    before = BEFORE.render(Context({"thread": thread}))
    assert AFTER.render(Context({"thread": thread})) == before
    assert "&lt;b&gt;eve&lt;/b&gt;" in before and "<em>there</em>" in before
