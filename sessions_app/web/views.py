"""The htmx UI: the session page (tree + conversation) and its actions (the list and import:
list_views.py).

Views are thin: they check access with selectors.session_get_for_user (404 for anything not the
user's), read through sessions_app.store.explorer and write only through sessions_app.store.services.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, HttpResponseLocation
from django_htmx.middleware import HtmxDetails

from sessions_app.access import audit, permissions
from sessions_app.access.permissions import Capability
from sessions_app.core import jsjson, piformat
from sessions_app.core import treeview as tv
from sessions_app.core.clock import now_ms
from sessions_app.core.tree import TEXTLESS_PREFIX, editor_text
from sessions_app.errors import EntryNotFound, ExportTooLarge, InvalidRequest
from sessions_app.models import Session, ShareLink
from sessions_app.render import markup, tools
from sessions_app.store import explorer, reviews, selectors, services, shares
from sessions_app.web import chat_views, exports, forms, header, review_views

P = ParamSpec("P")


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


View = Callable[Concatenate[HtmxHttpRequest, P], HttpResponseBase]


def request_user(request: HtmxHttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


SessionFunc = Callable[Concatenate[HtmxHttpRequest, Session, P], HttpResponseBase]


def session_view(func: SessionFunc[...], need: Capability = "read") -> View[...]:
    """Load the session if the user may `need` it (404 if they cannot see it, 403 if they can but
    may not do that: permissions.py); errors become responses in web/errors.py."""

    @functools.wraps(func)
    def wrapper(request: HtmxHttpRequest, public_id: str, *args: Any, **kwargs: Any) -> HttpResponseBase:
        session = selectors.session_get_for_user(user=request.user, public_id=public_id, need=need)
        return func(request, session, *args, **kwargs)

    return login_required(wrapper)


def session_action(need: Capability) -> Callable[[SessionFunc[...]], View[...]]:
    """session_view for a view that changes something: `@session_action("label")`."""
    return lambda func: session_view(func, need)


# --- session list and import -------------------------------------------------------------------


# --- the session page --------------------------------------------------------------------------


def with_query(base: str, **params: str | None) -> str:
    """base with the page parameters that are set (the default filter is left out)."""
    query = {k: v for k, v in params.items() if v and not (k == "filter" and v == "default")}
    return f"{base}?{urlencode(query)}" if query else base


def page_url(session: Session, **params: str | None) -> str:
    return with_query(reverse("sessions:detail", args=[session.public_id]), **params)


@dataclass(frozen=True, slots=True)
class Reader:
    """Whom the session page is drawn for: a signed-in user, with their capabilities, or whoever
    opens a share link: read-only, only the entries in the link's scope, every URL under the link's.
    The page, its fragments and its lazy loads (tree gaps and branches, earlier messages, full
    outputs, images) are the same views for both (web/shared_views.py has the link's)."""

    session: Session
    base: str  # the page's URL: /sessions/<id>/ or /s/<token>/
    can: dict[str, bool]
    share: ShareLink | None = None
    scope: set[str] | None = None  # the entries the reader may see; None: all of them
    token: str = ""  # the share link's, for its URLs (templatetags/piweb_urls.py)

    def url(self, **params: str | None) -> str:
        return with_query(self.base, **params)

    def check(self, entry_id: str) -> None:
        """EntryNotFound (a 404) for an entry outside the reader's scope, or an id no entry has (one
        that cannot be stored: PostgreSQL refuses a NUL even in a query)."""
        if (self.scope is not None and entry_id not in self.scope) or piformat.id_problem("id", entry_id):
            raise EntryNotFound(f"Entry {entry_id} not found", entryId=entry_id)

    def entry_row(self, entry_id: str) -> tv.Row:
        """The entry, if it exists and the reader may see it (EntryNotFound otherwise)."""
        self.check(entry_id)
        return explorer.entry_row(self.session, entry_id)

    def mode(self, asked: str | None) -> str:
        """The tree filter asked for; a share link offers no "Commented" filter (comments it may show
        are read-only extras)."""
        mode = asked or "default"
        return "default" if mode == "commented" and self.share is not None else mode

    def review_marks(self) -> dict[str, dict[str, Any]]:
        """The tree rows' comment counts and verdict markers the reader may see (shares.share_shows_reviews)."""
        if not shares.share_shows_reviews(self.share):
            return {}
        return reviews.tree_marks(session=self.session, within=self.scope)

    def threads(self, entry_ids: list[str]) -> dict[str, list[list[Any]]]:
        """The review threads on these entries that the reader may see, read-only for a link's visitor
        (its can is empty, so the threads partial draws no forms)."""
        if not shares.share_shows_reviews(self.share):
            return {}
        shown = [e for e in entry_ids if self.scope is None or e in self.scope]
        return reviews.threads_by_entry(session=self.session, entry_ids=shown)

    def place(self, params: dict[str, Any]) -> explorer.Place:
        if self.share is not None:
            return shares.shared_place(self.share, self.scope, leaf_id=params["leaf"], target_id=params["target"])
        return explorer.resolve_place(self.session, leaf_id=params["leaf"], target_id=params["target"])


def user_reader(request: HtmxHttpRequest, session: Session) -> Reader:
    return Reader(session, reverse("sessions:detail", args=[session.public_id]), _can(request, session))


KINDS = {
    "compaction": ("compaction", "⇊"),
    "branch_summary": ("summary", "↯"),
    "custom_message": ("custom", "◈"),
    "model_change": ("model", "◇"),
    "thinking_level_change": ("thinking", "✱"),
    "label": ("label", "#"),
    "session_info": ("info", "✎"),
    "custom": ("ext", "◌"),
}
ROLES = {
    "user": ("user", "●"),
    "assistant": ("assistant", "◆"),
    "toolResult": ("tool", "⚙"),
    "bashExecution": ("bash", "$"),
}


def kind_icon(row: tv.Row) -> tuple[str, str]:
    if row.type == "message":
        return ROLES.get(row.role or "", ("custom", "◈"))
    return KINDS.get(row.type, ("ext", "◌"))


def row_text(row: tv.Row) -> str:
    text = row.preview
    for prefix in ("user: ", "assistant: ", TEXTLESS_PREFIX):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


class Presenter:
    """Turns treeview items into what the tree templates draw (labels, classes, links)."""

    def __init__(
        self,
        reader: Reader,
        *,
        rows: dict[str, tv.Row],
        labels: dict[str, str],
        on_path: set[str],
        view_leaf: str | None,
        focus: str | None,
        mode: str,
        current: str | None,
        q: str = "",
    ) -> None:
        self.reader, self.session, self.rows, self.labels, self.on_path = reader, reader.session, rows, labels, on_path
        self.view_leaf, self.focus, self.mode, self.current, self.q = view_leaf, focus, mode, current, q
        self.words = tv.search_words(q)
        self.review_marks = reader.review_marks()

    def open_url(self, node: str) -> str:
        """The page at this node; a search's results keep the search (and its next and previous)."""
        if node in self.on_path and self.view_leaf:
            return self.reader.url(leaf=self.view_leaf, target=node, filter=self.mode, q=self.q)
        return self.reader.url(target=node, filter=self.mode, q=self.q)

    def node(self, node_id: str) -> dict[str, Any]:
        row = self.rows[node_id]
        kind, icon = kind_icon(row)
        return {
            "id": node_id,
            "text": row_text(row),
            "kind": kind,
            "icon": icon,
            "label": self.labels.get(node_id),
            "on_path": node_id in self.on_path,
            "current": node_id == self.current,
            "focus": node_id == self.focus,
            "url": self.open_url(node_id),
            "type": row.type,
            "role": row.role,
            "marked": markup.mark_words(row_text(row), self.words) if self.words else None,
            "review": self.review_marks.get(node_id),
        }

    def items(self, items: Iterable[tv.Item]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, tv.Gap):
                out.append(
                    {
                        "gap": True,
                        "node": item.node,
                        "count": item.count,
                        "seg": item.seg,
                        "up": item.up,
                        "depth": item.depth,
                    }
                )
                continue
            shown = self.node(item.id)
            shown.update(seg=item.seg, head=item.head, seg_len=item.seg_len, depth=item.depth, kids=item.kids)
            shown["alts"] = [self.branch(b, item.depth + 1) for b in item.alts]
            out.append(shown)
        return out

    def branch(self, b: tv.Branch, depth: int) -> dict[str, Any]:
        shown = self.node(b.id)
        shown.update(size=b.size, depth=depth, items=self.items(b.items) if b.items is not None else None)
        return shown


def _place_params(request: HtmxHttpRequest) -> dict[str, Any]:
    return forms.PlaceForm(request.GET).place()


def detail_context(request: HtmxHttpRequest, reader: Reader, params: dict[str, Any]) -> dict[str, Any]:
    session = reader.session
    params = {**params, "mode": reader.mode(params["mode"])}
    place = reader.place(params)
    data = explorer.page(session, place=place, mode=params["mode"], search=params["q"], scope=reader.scope)
    leaf_id = place.leaf.id if place.leaf else None
    target_id = place.target.id if place.target else None
    pres = Presenter(
        reader,
        rows=data.tree.rows,
        labels=data.labels,
        on_path=data.tree.on_path,
        view_leaf=leaf_id,
        focus=target_id,
        mode=params["mode"],
        current=place.session_leaf,
        q=params["q"],
    )
    shown = markup.shown_path(data.conversation)
    results = [pres.node(r.id) for r in data.tree.results]
    return {
        "session": session,
        "can": reader.can,
        "share_token": reader.token,
        "leaf_id": leaf_id,
        "target_id": target_id,
        "mode": params["mode"],
        "q": params["q"],
        "filters": [(f, tv.FILTER_LABELS[f]) for f in tv.FILTERS if f == reader.mode(f)],
        "tree": data.tree,
        "tree_items": pres.items(data.tree.items),
        "tree_roots": [pres.branch(b, 1) for b in data.tree.roots],
        "results": results,
        "hit": _search_hit(results, target_id),
        "shown": _decorate(reader, shown, data.siblings, data.labels, leaf_id, params["mode"], place.session_leaf),
        "following": leaf_id == place.session_leaf,
        "more_above": data.conv_more_above,
        "first_id": data.conversation[0].entry_id if data.conversation else None,
        "more_below_url": reader.url(leaf=leaf_id, target=data.conv_more_below, filter=params["mode"])
        if data.conv_more_below
        else None,
        "draft": request.session.get(f"draft:{session.public_id}", "") if reader.share is None else "",
        "self_url": reader.url(leaf=leaf_id, target=target_id, filter=params["mode"]),
        "base_url": reader.base,
        "labels_used": sorted(set(data.labels.values())),
        "review": None if reader.share else review_views.panel_context(session, anchor=target_id or leaf_id),
        **header.title_context(request, reader),
    }


def _search_hit(results: list[dict[str, Any]], target_id: str | None) -> dict[str, Any] | None:
    """Where the open entry is among a search's results: its place, and the previous and next
    results' URLs (which keep the search), wrapping around."""
    ids = [r["id"] for r in results]
    if target_id not in ids:
        return None
    at = ids.index(target_id)
    return {"n": at + 1, "prev": results[at - 1]["url"], "next": results[(at + 1) % len(results)]["url"]}


def _can(request: HtmxHttpRequest, session: Session) -> dict[str, bool]:
    """The user's capabilities on the session, once per request, for templates: {% if can.label %}."""
    return dict.fromkeys(permissions.session_capabilities(request.user, session), True)


def _leaf_path(reader: Reader, view_leaf: str | None, session_leaf: str | None) -> set[str] | None:
    """Entry ids on the session's leaf path; None when the viewer is reading that path anyway (the
    session's leaf as read: session_leaf), or may not move the leaf (a share link's visitor)."""
    session = reader.session
    if view_leaf in (session.leaf_id, session_leaf) or session.leaf_id is None or not reader.can.get("branch"):
        return None
    return {n.id for n in selectors.path_nodes(session=session, leaf_id=session.leaf_id)}


def _decorate(
    reader: Reader,
    shown: list[markup.Shown],
    sibs: dict[str, tv.Siblings],
    labels: dict[str, str],
    leaf_id: str | None,
    mode: str,
    session_leaf: str | None,
) -> list[dict[str, Any]]:
    leaf_path = _leaf_path(reader, leaf_id, session_leaf)
    threads = reader.threads([s.id for s in shown])
    out = []
    for s in shown:
        sib = sibs.get(s.id)
        out.append(
            {
                "s": s,
                "label": labels.get(s.id),
                "link": reader.url(leaf=leaf_id, target=s.id),
                "sib": sib,
                "prev_url": reader.url(target=sib.prev, filter=mode) if sib and sib.prev else None,
                "next_url": reader.url(target=sib.next, filter=mode) if sib and sib.next else None,
                "current": s.id == session_leaf,
                **_compare_urls(reader, s.id, sib, session_leaf, leaf_id),
                "off_path": leaf_path is not None and s.id not in leaf_path,
                "threads": threads.get(s.id, []),
            }
        )
    return out


def _compare_urls(
    reader: Reader, entry_id: str, sib: tv.Siblings | None, leaf: str | None, view_leaf: str | None
) -> dict[str, str]:
    """The compare page with the alternative beside this entry (the branch read, to view_leaf,
    against the alternative's newest leaf), and with the session's leaf; none for a share link's
    visitor (the page is for the session's readers)."""
    if reader.share is not None:
        return {}
    base = reverse("sessions:compare", args=[reader.session.public_id])
    urls = {}
    other = (sib.next or sib.prev) if sib else None
    if other:
        urls["compare_sib_url"] = with_query(base, a=view_leaf or entry_id, b=other, down="1")
    if leaf and leaf != entry_id:
        urls["compare_leaf_url"] = with_query(base, a=entry_id, b=leaf)
    return urls


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@session_view
def session_detail(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    context = detail_context(request, user_reader(request, session), _place_params(request))
    if request.htmx and request.htmx.target in ("explorer", "tree-body", "conversation"):
        part = {"explorer": "explorer", "tree-body": "tree-body", "conversation": "conversation"}[request.htmx.target]
        return render(request, f"sessions_app/session_detail.html#{part}", context)
    context.update(chat_views.composer_context(session, draft=context["draft"]))
    audit.audit_record(action="session.open", obj_type="session", obj_id=session.public_id)
    return render(request, "sessions_app/session_detail.html", context)


# The session page's lazy loads (tree gaps and branches, earlier messages, full outputs, images), for
# a signed-in user (user_read, below) or a share link's visitor (shared_views.shared_read).

ReaderFunc = Callable[Concatenate[HtmxHttpRequest, Reader, P], HttpResponse]


def gap_response(request: HtmxHttpRequest, reader: Reader) -> HttpResponse:
    form = forms.GapForm(request.GET)
    if not form.is_valid():
        raise InvalidRequest("bad gap", errors=form.errors.get_json_data())
    d = form.cleaned_data
    mode = reader.mode(d.get("filter"))
    reader.entry_row(d["node"])
    leaf = d.get("leaf") or None
    if leaf is not None:
        reader.check(leaf)
    current = explorer.reading_leaf(reader.session)
    items, rows, on_path = explorer.gap_panel(
        reader.session,
        current=current,
        node_id=d["node"],
        up=d["up"],
        depth=d.get("d") or 0,
        mode=mode,
        leaf_id=leaf,
        scope=reader.scope,
    )
    labels = selectors.labels(session=reader.session, within=reader.scope)
    pres = Presenter(
        reader,
        rows=rows,
        labels=labels,
        on_path=on_path,
        view_leaf=leaf,
        focus=None,
        mode=mode,
        current=current,
    )
    return render(request, "sessions_app/partials/tree_items.html", _tree_ctx(reader, pres.items(items), mode, d))


def branch_response(request: HtmxHttpRequest, reader: Reader) -> HttpResponse:
    form = forms.GapForm(request.GET)
    if not form.is_valid():
        raise InvalidRequest("bad branch", errors=form.errors.get_json_data())
    d = form.cleaned_data
    mode = reader.mode(d.get("filter"))
    reader.entry_row(d["node"])
    current = explorer.reading_leaf(reader.session)
    items, rows = explorer.branch_panel(
        reader.session, node_id=d["node"], depth=d.get("d") or 1, mode=mode, current=current, scope=reader.scope
    )
    labels = selectors.labels(session=reader.session, within=reader.scope)
    pres = Presenter(
        reader,
        rows=rows,
        labels=labels,
        on_path=set(),
        view_leaf=None,
        focus=None,
        mode=mode,
        current=current,
    )
    return render(request, "sessions_app/partials/tree_items.html", _tree_ctx(reader, pres.items(items), mode, d))


def _tree_ctx(reader: Reader, items: list[dict[str, Any]], mode: str, d: dict[str, Any]) -> dict[str, Any]:
    return {
        "session": reader.session,
        "share_token": reader.token,
        "items": items,
        "mode": mode,
        "leaf_id": d.get("leaf") or "",
    }


def earlier_response(request: HtmxHttpRequest, reader: Reader) -> HttpResponse:
    session = reader.session
    before = request.GET.get("before", "")
    reader.entry_row(before)  # its ancestors are in any scope it is in
    entries, more = explorer.earlier_entries(session, before)
    shown = markup.shown_path(entries)
    leaf = request.GET.get("leaf") or None
    labels = selectors.labels(session=session, within=reader.scope)
    sibs = explorer.siblings_for(session, entries, reader.scope)
    context = {
        "session": session,
        "can": reader.can,
        "share_token": reader.token,
        "shown": _decorate(reader, shown, sibs, labels, leaf, "default", explorer.reading_leaf(session)),
        "more_above": more,
        "first_id": entries[0].entry_id if entries else None,
        "leaf_id": leaf,
    }
    return render(request, "sessions_app/partials/entries.html", context)


def output_response(request: HtmxHttpRequest, reader: Reader, entry_id: str) -> HttpResponse:
    reader.check(entry_id)
    entry = selectors.entry_get(session=reader.session, entry_id=entry_id)
    data = jsjson.loads(entry.raw)
    message = data.get("message") if isinstance(data.get("message"), dict) else {}
    block = markup.output_block(message.get("content") or message.get("output"), full=True)
    return render(request, "sessions_app/partials/output.html", {"b": block, "session": reader.session})


def call_response(request: HtmxHttpRequest, reader: Reader, entry_id: str, index: int) -> HttpResponse:
    """A tool call drawn whole (its diff or file uncut): the "Show all" of a long one."""
    reader.check(entry_id)
    entry = selectors.entry_get(session=reader.session, entry_id=entry_id)
    message = jsjson.loads(entry.raw).get("message")
    content = message.get("content") if isinstance(message, dict) else None
    block = content[index] if isinstance(content, list) and index < len(content) else None
    if not isinstance(block, dict) or block.get("type") != "toolCall":
        raise Http404("no such tool call")
    b = markup.tool_call_block(block, index, full=True)
    context = {"b": b, "session": reader.session, "full": True, "full_lines": f"{tools.FULL_LINES:,}"}
    return render(request, "sessions_app/partials/tool_args.html", context)


def image_response(request: HtmxHttpRequest, reader: Reader, entry_id: str, index: int) -> HttpResponse:
    reader.check(entry_id)
    entry = selectors.entry_get(session=reader.session, entry_id=entry_id)
    found = markup.image_block(entry.raw, index)
    if found is None:
        raise Http404("no such image")
    mime, data = found
    response = HttpResponse(base64.b64decode(data), content_type=mime)
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Cache-Control"] = "private, max-age=86400"
    return response


def user_read(func: ReaderFunc[P]) -> View[...]:
    """A GET of the session page's lazy loads for a user who may read the session."""

    @functools.wraps(func)
    def view(request: HtmxHttpRequest, session: Session, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        return func(request, user_reader(request, session), *args, **kwargs)

    return require_GET(session_view(view))


tree_gap = user_read(gap_response)
tree_branch = user_read(branch_response)
conversation_earlier = user_read(earlier_response)
entry_output = user_read(output_response)
entry_call = user_read(call_response)
entry_image = user_read(image_response)


# --- actions -----------------------------------------------------------------------------------


def _go(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """After a change: htmx swaps the explorer in place (and pushes the URL); plain forms redirect."""
    if request.htmx:
        return HttpResponseLocation(url, target="#explorer", select="#explorer", swap="outerHTML")
    return redirect(url)


def _entry_form(request: HtmxHttpRequest, session: Session, form_class: type[forms.EntryForm]) -> dict[str, Any]:
    form = form_class(request.POST)
    if not form.is_valid():
        raise InvalidRequest("Choose an entry.", errors=form.errors.get_json_data())
    return form.cleaned_data


@require_POST
@session_action("branch")
def entry_continue(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    """pi's "continue from here": a user (or custom) message moves the leaf to its parent and puts
    its text in the composer; anything else becomes the leaf."""
    d = _entry_form(request, session, forms.EntryForm)
    row = explorer.entry_row(session, d["entry"])
    new_leaf, takes_text = tv.continue_target(row)
    services.leaf_move(session=session, entry_id=new_leaf)
    key = f"draft:{session.public_id}"
    if takes_text:
        entry = selectors.entry_get(session=session, entry_id=row.id)
        request.session[key] = editor_text(jsjson.loads(entry.raw))
    else:
        request.session.pop(key, None)
    view_leaf = new_leaf or row.id
    return _go(request, page_url(session, leaf=view_leaf, target=view_leaf, filter=d.get("filter")) + "#composer")


@require_POST
@session_action("label")
def entry_label(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    d = _entry_form(request, session, forms.LabelForm)
    explorer.entry_row(session, d["entry"])
    label = "" if d.get("clear") else d.get("label", "")
    services.label_set(session=session, target_id=d["entry"], label=label, author=request_user(request))
    return _go(
        request, page_url(session, leaf=d.get("leaf"), target=d.get("target") or d["entry"], filter=d.get("filter"))
    )


@require_POST
@session_action("fork")
def entry_fork(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    """A new session with the path to this entry (from a user message: to its parent, text to the composer)."""
    d = _entry_form(request, session, forms.EntryForm)
    row = explorer.entry_row(session, d["entry"])
    at, takes_text = tv.continue_target(row)
    fork = services.session_fork(session=session, entry_id=at or row.id, owner=request_user(request))
    if takes_text and at is not None:
        entry = selectors.entry_get(session=session, entry_id=row.id)
        request.session[f"draft:{fork.public_id}"] = editor_text(jsjson.loads(entry.raw))
    url = page_url(fork)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
@session_action("chat")
def entry_append(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    """The composer: append the text as a user message at the session's leaf."""
    form = forms.ComposerForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest("Write something first.")
    payload = {
        "type": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": form.cleaned_data["text"]}],
            "timestamp": now_ms(),
        },
    }
    entry = services.entry_append(session=session, payload=payload, author=request_user(request))
    request.session.pop(f"draft:{session.public_id}", None)
    return _go(request, page_url(session, leaf=entry.entry_id, target=entry.entry_id))


@require_POST
@session_action("manage")
def session_rename(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    """The header's rename form: htmx swaps the header (partial session-title) with the new name and
    the form closed, or with the form open and its errors; a plain form goes back to the page."""
    form = forms.RenameForm(request.POST)
    if form.is_valid():
        services.session_rename(session=session, name=form.cleaned_data["name"], author=request_user(request))
        session.refresh_from_db()
        if not request.htmx:
            return redirect(forms.next_url(request, page_url(session)))
    context = {**header.title_context(request, user_reader(request, session)), "rename_form": form, "oob_title": True}
    status = 200 if form.is_valid() else forms.FORM_ERRORS
    if not request.htmx:  # a plain form with errors: the page again, the form open
        context = {**detail_context(request, user_reader(request, session), forms.PlaceForm({}).place()), **context}
        context.update(chat_views.composer_context(session, draft=context["draft"]), oob_title=False)
        return render(request, "sessions_app/session_detail.html", context, status=status)
    return render(request, "sessions_app/session_detail.html#session-title", context, status=status)


@require_http_methods(["GET", "POST"])
@session_action("delete")
def session_delete(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    if request.method == "POST":
        services.session_delete(session=session)
        url = reverse("sessions:list")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    return render(request, "sessions_app/session_delete.html", {"session": session})


@require_GET
@session_view
def export_jsonl(request: HtmxHttpRequest, session: Session) -> StreamingHttpResponse:
    return exports.jsonl_response(request, session)


@require_GET
@session_view
def export_page(request: HtmxHttpRequest, session: Session) -> HttpResponseBase:
    try:
        with_reviews = request.GET.get("comments") in ("1", "true", "on")
        return exports.html_response(request, session, with_reviews=with_reviews)
    except ExportTooLarge as exc:
        context = {"session": session, "message": exc.message, "jsonl": exc.extra["jsonl"]}
        return render(request, "sessions_app/export_too_large.html", context, status=exc.status)
