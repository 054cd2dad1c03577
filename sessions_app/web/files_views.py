"""A branch's "Files changed" page (/sessions/<id>/files/?leaf=<entry>): what the edit and write
calls on the path from the root to the leaf did to each file, and the comment threads of the
entries that made the changes (the same threads as on the session page). Readers of the session
only: share links do not get it."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sessions_app.access import permissions
from sessions_app.models import Session
from sessions_app.render import files
from sessions_app.store import explorer, reviews, selectors
from sessions_app.web import forms
from sessions_app.web.views import HtmxHttpRequest, session_view


@require_GET
@session_view
def files_changed(request: HtmxHttpRequest, session: Session) -> HttpResponse:
    params = forms.PlaceForm(request.GET).place()
    place = explorer.resolve_place(session, leaf_id=params["leaf"], target_id=None)
    leaf_id = place.leaf.id if place.leaf else None
    shown = files.files_shown(selectors.branch_files(session=session, leaf_id=leaf_id)) if leaf_id else []
    entry_ids = list(dict.fromkeys(c.entry_id for f in shown for c in f.changes))
    threads = reviews.threads_by_entry(session=session, entry_ids=entry_ids)
    seen: set[str] = set()
    rows = []
    for f in shown:
        changes = []
        for c in f.changes:
            # An entry's threads are drawn once (at the first file it changed), as ids are unique.
            first = c.entry_id not in seen
            seen.add(c.entry_id)
            changes.append({"c": c, "first": first, "threads": threads.get(c.entry_id, []) if first else []})
        rows.append({"f": f, "changes": changes})
    context = {
        "session": session,
        "can": dict.fromkeys(permissions.session_capabilities(request.user, session), True),
        "leaf_id": leaf_id,
        "files": rows,
        "added": sum(f.added for f in shown),
        "removed": sum(f.removed for f in shown),
    }
    return render(request, "sessions_app/files_changed.html", context)
