"""The context inspector, "What the model saw" (/sessions/<id>/context/?entry=<entry>): the messages
of pi's buildSessionContext at an entry, as the model receives them, with pi's token estimates, the
total against the model's context window and the next compaction's cut (store/inspector.py).

Readers of the session, and share links for the entries in their scope (every entry on the path to
such an entry is in the scope too, so the context never shows anything the link does not)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from sessions_app.core import compaction
from sessions_app.llm.registry import registry_from_settings
from sessions_app.store import inspector
from sessions_app.web import shared_views
from sessions_app.web.views import HtmxHttpRequest, Reader, user_read

ROLE_NAMES = {
    "user": "User",
    "assistant": "Assistant",
    "toolResult": "Tool result",
    "bashExecution": "Bash execution",
    "custom": "Custom message",
    "branchSummary": "Branch summary",
    "compactionSummary": "Compaction summary",
}


def context_response(request: HtmxHttpRequest, reader: Reader) -> HttpResponse:
    entry_id = request.GET.get("entry") or reader.session.leaf_id or ""
    reader.check(entry_id)
    found = inspector.context_inspect(session=reader.session, entry_id=entry_id, registry=registry_from_settings())
    window = found.model_info.context_window if found.model_info else None
    items = [
        {
            "i": item,
            "n": n + 1,
            "role": ROLE_NAMES.get(str(item.message.get("role")), str(item.message.get("role"))),
            "link": reader.url(leaf=item.entry_id, target=item.entry_id),
        }
        for n, item in enumerate(found.items)
    ]
    context = {
        "session": reader.session,
        "share_token": reader.token,
        "found": found,
        "items": items,
        "window": window,
        "percent": round(100 * found.tokens / window, 1) if window else None,
        # Where pi would compact on its own: within the reserve of the window's end.
        "high": window - compaction.DEFAULT_SETTINGS.reserve_tokens if window else None,
        "back": reader.url(leaf=entry_id, target=entry_id),
        "api": "" if reader.share else reverse("api:session_context", args=[reader.session.public_id]),
    }
    return render(request, "sessions_app/context.html", context)


context_page = user_read(context_response)
shared_context = shared_views.shared_read(context_response)
