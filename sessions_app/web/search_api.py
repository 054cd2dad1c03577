"""GET /api/search: hits across every session the caller may read (store/search.py)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from sessions_app.store import search
from sessions_app.web.schemas import ErrorOut, SearchHitOut, SearchIndexingOut, SearchOut

router = Router(tags=["search"])


@router.get("", response={200: SearchOut, 422: ErrorOut}, url_name="search", exclude_unset=True)
def search_hits(request: HttpRequest, q: str = "", limit: int = 20, cursor: str | None = None) -> SearchOut:
    found = search.search_audited(user=request.user, q=q, limit=limit, cursor=cursor, via="api")
    pending = {"indexing": [SearchIndexingOut(sessionId=pk, sessionName=name) for pk, name in found.indexing]}
    return SearchOut(
        **(pending if found.indexing else {}),
        hits=[
            SearchHitOut(
                sessionId=h.session_id,
                entryId=h.entry_id,
                snippet=h.snippet,
                role=h.role,
                timestamp=h.timestamp,
                sessionName=h.session_name,
            )
            for h in found.hits
        ],
        next=found.next,
        ranked=found.ranked,
    )
