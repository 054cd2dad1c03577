"""Imports started from the session list, with real server-side progress.

The page uploads each file with the import form (background=1); the view starts the import in a
background thread and answers at once with a progress fragment that polls import_progress. The
thread reports how many bytes pipeline.session_import has parsed (and stored) into the cache
under a random job id; the fragment redraws with that until the job is done, then shows its
result. Only the user who started a job may read it. The job's thread has its own database
connection, closed when it ends, and runs in a copy of the request's context (the audit trail
keeps the request's IP and id).

The progress lives in the default cache: Django's LocMemCache is per process, so a deployment
with several processes needs a shared cache (like the sign-in limits: signin.py).
Without JavaScript the form posts without background=1 and the import runs in the request.

An upload is never read into memory: upload_source maps Django's temporary file (an upload over
FILE_UPLOAD_MAX_MEMORY_SIZE; a smaller one is in memory already), and the mapping outlives the
request that removes the file, so the job's thread reads it a block at a time.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import threading
from typing import Any, TypedDict

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import UploadedFile
from django.db import connections
from django.http import HttpRequest

from sessions_app.access import teams
from sessions_app.core.filesource import Source
from sessions_app.errors import ImportRejected, ImportTooLarge, SessionsError
from sessions_app.models import Team
from sessions_app.store.importing import pipeline

log = logging.getLogger(__name__)

TTL_SECONDS = 3600


class Result(TypedDict, total=False):
    name: str
    ok: bool
    message: str
    errors: list[dict[str, Any]]
    status: int  # a refused file's HTTP status (413: a part over a size limit)
    session: dict[str, str]  # {"public_id": ...}: what the result template links to
    added: int
    created: bool


class Job(TypedDict, total=False):
    id: str
    user: int
    name: str
    total: int
    done: int
    state: str  # "running" | "done"
    result: Result


def upload_source(upload: UploadedFile) -> Source:
    """An uploaded file's bytes, mapped from its temporary file (or in memory if it is small)."""
    path = getattr(upload, "temporary_file_path", None)
    if path is not None:
        return Source.open(path())
    upload.seek(0)
    return Source(upload.read())


MULTIPART_SLACK = 1024 * 1024  # what a multipart body may hold beside its files


def require_upload_size(request: HttpRequest) -> None:
    """ImportTooLarge (413) before an upload is parsed if its body is over the file limit."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    limit = settings.PIWEB_IMPORT_MAX_FILE_BYTES
    if length > limit + MULTIPART_SLACK:
        message = f"the upload is {length} bytes, over the limit of {limit} bytes for a file"
        raise ImportTooLarge(message, errors=[{"line": 0, "message": message}])


def import_one(*, user: User, data: Source, name: str, into: Team | None, progress: Any = None) -> Result:
    """Import one file (into a team the caller may import into, already checked); never raises
    for a rejected file: the result says why, with line numbers."""
    try:
        result = pipeline.session_import(owner=user, data=data, source_path=name, progress=progress)
    except ImportRejected as exc:
        errors = exc.extra.get("errors", [])
        return {"name": name, "ok": False, "message": exc.message, "errors": errors, "status": exc.status}
    except SessionsError as exc:
        return {"name": name, "ok": False, "message": exc.message, "errors": [], "status": exc.status}
    if into is not None and result.session.team_id is None:
        teams.session_move_to_team(session=result.session, team=into, actor=user)
    return {
        "name": name,
        "ok": True,
        "session": {"public_id": result.session.public_id},
        "added": result.added,
        "created": result.created,
    }


def _key(job_id: str) -> str:
    return f"piweb:import:{job_id}"


def _put(job: Job) -> None:
    cache.set(_key(job["id"]), job, TTL_SECONDS)


def job_get(*, user: User, job_id: str) -> Job | None:
    """The job if this user started it (None otherwise: missing, expired or someone else's)."""
    job: Job | None = cache.get(_key(job_id))
    if job is None or job.get("user") != user.pk:
        return None
    return job


def job_start(*, user: User, data: Source, name: str, into: Team | None) -> Job:
    """Start importing in a background thread (inline when settings.PIWEB_IMPORT_BACKGROUND is
    False, as in tests on a transaction that other connections cannot see)."""
    job: Job = {
        "id": secrets.token_urlsafe(16),
        "user": user.pk,
        "name": name,
        "total": len(data),
        "done": 0,
        "state": "running",
    }
    _put(job)
    if not settings.PIWEB_IMPORT_BACKGROUND:
        _run(Job(**job), user, data, into, own_connection=False)
        return job_get(user=user, job_id=job["id"]) or job
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run,
        args=(_run, Job(**job), user, data, into),
        name=f"piweb-import-{job['id'][:8]}",
        daemon=True,
    )
    thread.start()
    return job


def _run(job: Job, user: User, data: Source, into: Team | None, own_connection: bool = True) -> None:
    def progress(parsed: int) -> None:
        job["done"] = min(job["total"], job["done"] + parsed)
        _put(job)

    try:
        result = import_one(user=user, data=data, name=job["name"], into=into, progress=progress)
    except Exception:
        log.exception("import job %s failed", job["id"])
        result = {"name": job["name"], "ok": False, "message": "The import failed on the server.", "errors": []}
    finally:
        data.close()
        if own_connection:
            connections.close_all()
    job["state"], job["done"], job["result"] = "done", job["total"], result
    _put(job)
