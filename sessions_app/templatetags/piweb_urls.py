"""{% reader_url "tree_gap" %}: a URL of the session page's family for whoever reads the page, the
session's own (sessions:<name>) or, on a share link's page (share_token in the context), the link's
(settings:shared_<name>), so that the tree and conversation partials serve both (web/views.Reader)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

register = template.Library()

NAMES = frozenset({"context", "tree_gap", "tree_branch", "earlier", "output", "call", "image"})


@register.simple_tag(takes_context=True)
def reader_url(context: template.Context, name: str, *args: Any) -> str:
    assert name in NAMES, name
    token = context.get("share_token")
    if token:
        return reverse(f"settings:shared_{name}", args=[token, *args])
    return reverse(f"sessions:{name}", args=[context["session"].public_id, *args])
