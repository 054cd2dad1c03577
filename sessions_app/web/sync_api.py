"""REST API for `piweb sync`: a mirror's sync state, its first push, and the lines it grew by.

A `push` token may call these operations and nothing else (access/api_tokens.py); a `write`
token may too. Each push is one batch through the import pipeline: all of it is stored or none.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja import File, Form, Router, Status, UploadedFile

from sessions_app.access import teams
from sessions_app.errors import InvalidRequest, SessionNotFound
from sessions_app.store import selectors
from sessions_app.store.importing import background, identity, increments, pipeline, rewrite
from sessions_app.web.schemas import ErrorOut, ImportErrorOut, SyncPushOut, SyncStateOut

router = Router(tags=["sync"])
PUSH_ERRORS = {400: ImportErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 413: ImportErrorOut}
SHA256_HEX = 64


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # both authenticators let only signed-in users through
    return request.user


def _origin(host: str, path: str) -> pipeline.Origin:
    if not host.strip() or len(host) > 255:
        raise InvalidRequest("host must name the pushing machine (1 to 255 characters)", field="host")
    return pipeline.Origin(host=host.strip(), path=path)


def _sha(value: str, field: str) -> str:
    if len(value) != SHA256_HEX or any(c not in "0123456789abcdef" for c in value):
        raise InvalidRequest(f"{field} must be a SHA-256 in lower-case hex", field=field)
    return value


@router.get("/{source_id}", response={200: SyncStateOut, 404: ErrorOut}, url_name="sync_state")
def sync_state(request: HttpRequest, source_id: str) -> SyncStateOut:
    """The caller's mirror of pi's session source_id (their own first); 404 if they have none."""
    session = identity.sync_copy(user=_user(request), source_id=source_id)
    if session is None:
        raise SessionNotFound()
    return SyncStateOut.of(session)


@router.post("", response={201: SyncPushOut, 200: SyncPushOut, **PUSH_ERRORS}, url_name="sync_push")
def sync_push(
    request: HttpRequest, file: File[UploadedFile], host: Form[str], path: Form[str] = "", team: Form[str] = ""
) -> Status[SyncPushOut]:
    """A file's first push (its complete lines); pushed again whole, only what it grew by is added,
    and a changed prefix is refused (409 prefix_changed)."""
    background.require_upload_size(request)
    origin = _origin(host, path)
    into = teams.team_for_import(user=_user(request), public_id=team) if team else None
    source = background.upload_source(file)
    try:
        result = pipeline.session_import(
            owner=_user(request), data=source, source_path=path or file.name or "", origin=origin
        )
    finally:
        source.close()
    if into is not None and result.created:
        teams.session_move_to_team(session=result.session, team=into, actor=_user(request))
    out = SyncPushOut(created=result.created, added=result.added, state=SyncStateOut.of(result.session))
    return Status(201 if result.created else 200, out)


@router.post("/{session_id}/lines", response={200: SyncPushOut, **PUSH_ERRORS}, url_name="sync_lines")
def sync_lines(
    request: HttpRequest,
    session_id: str,
    file: File[UploadedFile],
    offset: Form[int],
    sha256: Form[str],
    sha256_after: Form[str],
    host: Form[str],
    path: Form[str] = "",
) -> SyncPushOut:
    """Append the complete lines in `file` to a mirror holding exactly `offset` bytes whose SHA-256
    is `sha256` (409 with the server's state otherwise)."""
    background.require_upload_size(request)
    session = selectors.session_get_for_user(user=request.user, public_id=session_id, need="import")
    if offset < 0:
        raise InvalidRequest("offset must be 0 or more", field="offset")
    increment = pipeline.Increment(offset, _sha(sha256, "sha256"), _sha(sha256_after, "sha256_after"))
    file.seek(0)
    result = increments.session_lines_append(
        owner=_user(request), session=session, data=file.read(), increment=increment, origin=_origin(host, path)
    )
    return SyncPushOut(created=False, added=result.added, state=SyncStateOut.of(result.session))


@router.post("/{session_id}/replace", response={200: SyncPushOut, **PUSH_ERRORS}, url_name="sync_replace")
def sync_replace(
    request: HttpRequest, session_id: str, file: File[UploadedFile], host: Form[str], path: Form[str] = ""
) -> SyncPushOut:
    """pi migrated the mirror's v1/v2 file to v3 in place: replace the mirror with it, keeping the
    labels made in piweb (store/importing/rewrite.py); 409 prefix_changed if it is not that."""
    background.require_upload_size(request)
    session = selectors.session_get_for_user(user=request.user, public_id=session_id, need="import")
    origin = _origin(host, path)
    file.seek(0)
    new = rewrite.mirror_replace_migrated(user=_user(request), session=session, data=file.read(), origin=origin)
    return SyncPushOut(created=True, added=new.last_seq, state=SyncStateOut.of(new))
