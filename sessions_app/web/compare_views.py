"""Branch compare (/sessions/<id>/compare/?a=<entry>&b=<entry>): two branches side by side from
their common ancestor, with each side's cost and tokens. b left out is the session's leaf; with
neither, the page only asks for them. The sibling switcher's link compares the branch being read
with the alternative's (down=1: b's newest leaf, where the switcher itself would go). Readers of
the session only: share links do not get it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from sessions_app.core import piformat
from sessions_app.core.tree import Node
from sessions_app.errors import EntryNotFound, InvalidRequest
from sessions_app.models import Session
from sessions_app.render import compare
from sessions_app.store import explorer, selectors
from sessions_app.web import forms
from sessions_app.web.views import HtmxHttpRequest, session_view


def compare_url(session: Session, a: str, b: str | None = None, **extra: Any) -> str:
    query = {"a": a, **({"b": b} if b else {}), **extra}
    return reverse("sessions:compare", args=[session.public_id]) + "?" + urlencode(query)


def _checked(entry_id: str) -> str:
    # An id no entry can have (PostgreSQL refuses a NUL even in a query) is as missing as any other.
    if piformat.id_problem("id", entry_id):
        raise EntryNotFound(f"Entry {entry_id} not found", entryId=entry_id)
    return entry_id


def _read(heads: list[Node], lines: dict[str, dict[str, Any]]) -> list[Node]:
    return [Node(id=n.id, parent_id=n.parent_id, type=n.type, data=lines[n.id]) for n in heads]


@require_GET
@vary_on_headers("HX-Request")
@session_view
def compare_page(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    form = forms.CompareForm(request.GET)
    if not form.is_valid():
        raise InvalidRequest("Choose two entries.", errors=form.errors.get_json_data())
    d = form.cleaned_data
    a, b, start = d.get("a") or None, d.get("b") or session.leaf_id, d.get("start") or 0
    context: dict[str, Any] = {"session": session, "share_token": "", "a": a or "", "b": b or "", "leaf_id": None}
    if a is None or b is None:
        return render(request, "sessions_app/compare.html", context)
    if d.get("down"):
        explorer.entry_row(session, _checked(b))
        b = explorer.newest_leaf(session, b)
        context["b"] = b
    split = selectors.compare_split(session=session, a=_checked(a), b=_checked(b))
    window_a, window_b = split.a[start : start + compare.PAGE], split.b[start : start + compare.PAGE]
    whole = not (request.htmx and start)  # else "Show more": the next rows only
    wanted = [n.id for n in (*window_a, *window_b)]
    if whole:
        wanted += compare.replies(split.a) + compare.replies(split.b)
    lines = selectors.entry_lines(session=session, ids=wanted)
    more = start + compare.PAGE if start + compare.PAGE < max(len(split.a), len(split.b)) else None
    context.update(
        rows=compare.rows(_read(window_a, lines), _read(window_b, lines)),
        more_url=compare_url(session, a, b, start=more) if more is not None else None,
    )
    if not whole:
        return render(request, "sessions_app/compare.html#compare-rows", context)
    context.update(
        ancestor_id=split.ancestor_id,
        side_a=compare.side_totals(split.a, lines),
        side_b=compare.side_totals(split.b, lines),
        swap_url=compare_url(session, b, a),
        leaf_id=session.leaf_id,
    )
    return render(request, "sessions_app/compare.html", context)
