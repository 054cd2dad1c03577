"""The page behind a share link (/s/<token>/): the session page's tree explorer and conversation,
read-only, showing only the entries in the link's scope (shares.share_scope), with its lazy loads
(tree gaps and branches, earlier messages, full outputs, images) under the link's URL.

Every request resolves the token (a revoked, expired or unknown link is a 404) and every entry it
names is checked against the scope (views.Reader: outside it is a 404 too). The page's name comes
from the shared path as well (shares.shared_title), never from another branch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from sessions_app.store import shares
from sessions_app.web import forms, views
from sessions_app.web.views import HtmxHttpRequest, Reader

SharedView = Callable[..., HttpResponse]


def share_view(func: SharedView) -> SharedView:
    """A GET under a share link: no referrer (the token is in the URL), not indexed."""

    @functools.wraps(func)
    def wrapper(request: HtmxHttpRequest, token: str, *args: Any, **kwargs: Any) -> HttpResponse:
        response = func(request, token, *args, **kwargs)
        response["Referrer-Policy"] = "no-referrer"
        response["X-Robots-Tag"] = "noindex"
        return response

    return require_GET(wrapper)


def share_reader(token: str) -> Reader:
    share = shares.share_resolve(token)
    base = reverse("settings:shared", args=[token])
    return Reader(share.session, base, {}, share=share, scope=shares.share_scope(share), token=token)


FRAGMENTS = {
    "explorer": "settings/shared.html#explorer",
    "tree-body": "sessions_app/session_detail.html#tree-body",
    "conversation": "sessions_app/session_detail.html#conversation",
}


@share_view
@vary_on_headers("HX-Request", "HX-Target")
def shared_page(request: HtmxHttpRequest, token: str) -> HttpResponse:
    reader = share_reader(token)
    assert reader.share is not None
    params = {**forms.PlaceForm(request.GET).place(), "q": ""}  # no search: it reads the whole session
    context = views.detail_context(request, reader, params)
    # No note about the session's leaf: the link's visitor reads, they do not follow anyone's leaf.
    context.update(share=reader.share, title=shares.shared_title(reader.share), following=True)
    if request.htmx and request.htmx.target in FRAGMENTS:
        return render(request, FRAGMENTS[request.htmx.target], context)
    shares.share_viewed(share=reader.share)
    return render(request, "settings/shared.html", context)


def shared_read(func: views.ReaderFunc[...]) -> SharedView:
    """A GET of the session page's lazy loads under a share link (views.gap_response and the rest)."""

    @functools.wraps(func)
    def view(request: HtmxHttpRequest, token: str, *args: Any, **kwargs: Any) -> HttpResponse:
        return func(request, share_reader(token), *args, **kwargs)

    return share_view(view)


shared_tree_gap = shared_read(views.gap_response)
shared_tree_branch = shared_read(views.branch_response)
shared_earlier = shared_read(views.earlier_response)
shared_output = shared_read(views.output_response)
shared_call = shared_read(views.call_response)
shared_image = shared_read(views.image_response)
