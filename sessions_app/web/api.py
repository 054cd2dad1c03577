"""REST API for sessions. Operations parse, call a selector or service, and return."""

from __future__ import annotations

import json
from typing import Any

import orjson
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from ninja import Body, File, Form, Router, Status, UploadedFile

from sessions_app.access import audit, teams
from sessions_app.access.permissions import Capability
from sessions_app.errors import InvalidEntry
from sessions_app.models import BIG_COLUMNS, Session
from sessions_app.store import selectors, services, shares, usage_facts
from sessions_app.store.importing import background, pipeline
from sessions_app.web import exports
from sessions_app.web.schemas import (
    CompareOut,
    ContextOut,
    EntryCreatedOut,
    EntryId,
    ErrorOut,
    ForkIn,
    ImportErrorOut,
    ImportOut,
    LabelIn,
    LeafIn,
    SessionIn,
    SessionOut,
    SessionPatch,
    ShareIn,
    ShareOut,
    UsageOut,
)

router = Router(tags=["sessions"])


def _session(request: HttpRequest, session_id: str, need: Capability = "read") -> Session:
    return selectors.session_get_for_user(user=request.user, public_id=session_id, need=need)


def _user(request: HttpRequest) -> User:
    # Both authenticators (token, Django session) only let signed-in users through.
    assert isinstance(request.user, User)
    return request.user


@router.get("", response=list[SessionOut], url_name="session_list")
def session_list(request: HttpRequest) -> list[SessionOut]:
    sessions = (
        selectors.session_list_for_user(user=request.user)
        .select_related("parent_session")
        .defer(*(f"parent_session__{name}" for name in BIG_COLUMNS))
    )
    return [SessionOut.of(s) for s in sessions]


@router.post("", response={201: SessionOut}, url_name="session_create")
def session_create(request: HttpRequest, body: SessionIn | None = None) -> Status[SessionOut]:
    body = body or SessionIn()
    session = services.session_create(owner=_user(request), name=body.name, cwd=body.cwd)
    return Status(201, SessionOut.of(session))


@router.post(
    "/import",
    response={201: ImportOut, 200: ImportOut, 400: ImportErrorOut, 409: ErrorOut, 413: ImportErrorOut},
    url_name="session_import",
)
def session_import(
    request: HttpRequest, file: File[UploadedFile], partial: Form[bool] = False, team: Form[str] = ""
) -> Status[ImportOut]:
    background.require_upload_size(request)
    into = teams.team_for_import(user=_user(request), public_id=team) if team else None
    source = background.upload_source(file)
    try:
        result = pipeline.session_import(
            owner=_user(request), data=source, source_path=file.name or "", partial=partial
        )
    finally:
        source.close()
    if into is not None and result.session.team_id is None:
        teams.session_move_to_team(session=result.session, team=into, actor=_user(request))
    out = ImportOut(
        id=result.session.public_id,
        created=result.created,
        entries=result.added,
        skipped=[p.as_dict() for p in result.skipped],
        version=result.version,
        session=SessionOut.of(result.session),
    )
    return Status(201 if result.created or result.added else 200, out)


@router.get("/{session_id}", response=SessionOut, url_name="session_detail")
def session_detail(request: HttpRequest, session_id: str) -> SessionOut:
    return SessionOut.of(_session(request, session_id))


@router.patch("/{session_id}", response=SessionOut, url_name="session_update")
def session_update(request: HttpRequest, session_id: str, body: SessionPatch) -> SessionOut:
    session = _session(request, session_id, "manage")
    services.session_rename(session=session, name=body.name, author=_user(request))
    return SessionOut.of(session)


@router.delete("/{session_id}", response={204: None}, url_name="session_delete")
def session_delete(request: HttpRequest, session_id: str) -> Status[None]:
    services.session_delete(session=_session(request, session_id, "delete"))
    return Status(204, None)


@router.get("/{session_id}/export.jsonl", url_name="session_export")
def session_export(
    request: HttpRequest, session_id: str, mirror: bool = False, labels: bool = False
) -> StreamingHttpResponse:
    """pi's file; mirror=true: a mirror's lines only (what `piweb pull` writes), labels=true: and
    the labels made in piweb on them, appended as pi label entries."""
    return exports.jsonl_response(request, _session(request, session_id), mirror=mirror, with_labels=labels)


@router.get("/{session_id}/export.html", url_name="session_export_html", response={409: ErrorOut})
def session_export_html(request: HttpRequest, session_id: str, comments: bool = False) -> StreamingHttpResponse:
    """pi's self-contained HTML export; 409 (with the JSONL export's URL) above the size guard.
    comments=true: with the review comments and verdicts under their entries."""
    return exports.html_response(request, _session(request, session_id), with_reviews=comments)


@router.get("/{session_id}/context", response=ContextOut, url_name="session_context")
def session_context(request: HttpRequest, session_id: str, leaf: EntryId | None = None) -> HttpResponse:
    session = _session(request, session_id)
    audit.audit_record(action="session.context", obj_type="session", obj_id=session.public_id, extra={"leaf": leaf})
    # Serialised directly (the schema documents it): validating every message costs as much as building it.
    body = selectors.session_context_json(session=session, leaf_id=leaf)
    return HttpResponse(body, content_type="application/json")


def _json(value: Any) -> HttpResponse:
    try:
        body = orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, which stored lines may hold
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return HttpResponse(body, content_type="application/json")


@router.get("/{session_id}/tree", url_name="session_tree")
def session_tree(request: HttpRequest, session_id: str) -> HttpResponse:
    # Serialised directly: a pydantic pass over 100k nodes would cost more than building them.
    return HttpResponse(selectors.tree_json(session=_session(request, session_id)), content_type="application/json")


@router.get("/{session_id}/compare", response={200: CompareOut, 404: ErrorOut}, url_name="session_compare")
def session_compare(request: HttpRequest, session_id: str, a: EntryId, b: EntryId) -> HttpResponse:
    """Two branches from where they part: each side root-first, as GET /tree's nodes."""
    session = _session(request, session_id)
    return _json(selectors.compare_json(session=session, a=a, b=b))


@router.get("/{session_id}/usage", response=UsageOut, url_name="session_usage")
def session_usage(request: HttpRequest, session_id: str) -> HttpResponse:
    """{"total", "branches": one per leaf, "byModel"}: what the assistant messages cost (core/usage_tree.py).
    Serialised directly (the schema documents it): a session may have thousands of leaves."""
    return _json(usage_facts.usage(session=_session(request, session_id)).as_json())


@router.post("/{session_id}/entries", response={201: EntryCreatedOut}, url_name="entry_create")
def entry_create(request: HttpRequest, session_id: str, body: Body[dict[str, Any]]) -> Status[dict[str, str]]:
    session = _session(request, session_id, "chat")
    if not isinstance(body.get("type"), str):
        raise InvalidEntry("field 'type' must be a string", field="type")
    payload = dict(body)
    parent = payload.pop("parentId", services.UNSET)
    entry = services.entry_append(session=session, payload=payload, parent_id=parent, author=_user(request))
    return Status(201, {"id": entry.entry_id})


@router.put("/{session_id}/leaf", response=SessionOut, url_name="session_leaf")
def session_leaf(request: HttpRequest, session_id: str, body: LeafIn) -> SessionOut:
    session = _session(request, session_id, "branch")
    services.leaf_move(session=session, entry_id=body.entryId)
    return SessionOut.of(session)


@router.post("/{session_id}/labels", response={201: EntryCreatedOut}, url_name="session_label")
def session_label(request: HttpRequest, session_id: str, body: LabelIn) -> Status[dict[str, str]]:
    session = _session(request, session_id, "label")
    entry = services.label_set(session=session, target_id=body.targetId, label=body.label, author=_user(request))
    return Status(201, {"id": entry.entry_id})


@router.post("/{session_id}/fork", response={201: SessionOut}, url_name="session_fork")
def session_fork(request: HttpRequest, session_id: str, body: ForkIn) -> Status[SessionOut]:
    session = _session(request, session_id, "fork")
    fork = services.session_fork(session=session, entry_id=body.entryId, owner=_user(request))
    return Status(201, SessionOut.of(fork))


@router.post("/{session_id}/shares", response={201: ShareOut}, url_name="share_create")
def share_create(request: HttpRequest, session_id: str, body: ShareIn) -> Status[ShareOut]:
    session = _session(request, session_id, "share")
    share, token = shares.share_create(
        session=session,
        user=_user(request),
        entry_id=body.entryId,
        expires_days=body.expiresDays,
        include_comments=body.includeComments,
    )
    url = request.build_absolute_uri(reverse("settings:shared", args=[token]))
    out = ShareOut(url=url, entryId=share.entry_id, expiresAt=share.expires_at, includeComments=share.include_comments)
    return Status(201, out)
