from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from ninja import Schema
from pydantic import AfterValidator

from sessions_app.core import piformat
from sessions_app.models import Session


def _storable_id(value: str) -> str:
    problem = piformat.id_problem("id", value)
    if problem is not None:
        raise ValueError(problem.replace("field 'id' ", "the entry id "))
    return value


# An entry id the API takes (body or query): any string an entry's id may be (piformat.id_problem).
EntryId = Annotated[str, AfterValidator(_storable_id)]


class ErrorOut(Schema):
    message: str
    extra: dict[str, Any] = {}


class ImportErrorOut(ErrorOut):
    errors: list[dict[str, Any]] = []


class SessionIn(Schema):
    name: str | None = None
    cwd: str = ""


class SessionPatch(Schema):
    name: str


class SessionOut(Schema):
    id: str
    name: str
    cwd: str
    created: str
    modified: str
    messageCount: int
    firstMessage: str
    leafId: str | None
    parentSessionId: str | None
    entries: int
    cost: float  # usage.cost.total summed over the assistant messages (GET .../usage has the detail)
    totalTokens: int

    @staticmethod
    def of(session: Session) -> SessionOut:
        ms = session.modified_ms
        modified = (
            datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            if ms
            else session.created
        )
        return SessionOut(
            id=session.public_id,
            name=session.name,
            cwd=session.cwd,
            created=session.created,
            modified=modified,
            messageCount=session.message_count,
            firstMessage=session.first_message or "(no messages)",
            leafId=session.leaf_id,
            parentSessionId=session.parent_session.public_id if session.parent_session else None,
            entries=session.last_seq,
            cost=session.cost,
            totalTokens=session.total_tokens,
        )


class ImportOut(Schema):
    id: str
    created: bool
    entries: int
    skipped: list[dict[str, Any]]
    version: int
    session: SessionOut


class CompareOut(Schema):
    """Two branches from their common ancestor (None: different roots), each side root-first from
    just below it, as GET /tree's nodes."""

    ancestorId: str | None
    a: list[dict[str, Any]]
    b: list[dict[str, Any]]


class ContextOut(Schema):
    leafId: str | None
    messages: list[dict[str, Any]]
    thinkingLevel: Any
    model: dict[str, Any] | None


class UsageTotalOut(Schema):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    totalTokens: float
    cost: float


class UsageBranchOut(Schema):
    leafId: str
    cost: float
    totalTokens: float
    messages: int
    current: bool


class UsageModelOut(Schema):
    provider: str
    model: str
    cost: float
    totalTokens: float


class UsageOut(Schema):
    total: UsageTotalOut
    branches: list[UsageBranchOut]  # one per leaf (entry without children), in file order
    byModel: list[UsageModelOut]


class EntryCreatedOut(Schema):
    id: str


class LeafIn(Schema):
    entryId: EntryId | None


class LabelIn(Schema):
    targetId: EntryId
    label: str | None = None


class ForkIn(Schema):
    entryId: EntryId


class ShareIn(Schema):
    entryId: EntryId | None = None  # None: the whole session; else that branch
    expiresDays: int | None = None
    includeComments: bool = False  # the page shows review threads and verdicts (in its scope)


class ShareOut(Schema):
    url: str  # shown once: only a hash of the token is stored
    entryId: str | None
    expiresAt: datetime | None
    includeComments: bool


class SyncStateOut(Schema):
    """How much of a pi file a mirror holds: what `piweb sync` sends from."""

    id: str  # the server id (pi's id when it was free)
    sourceId: str  # pi's session id
    bytes: int
    lines: int | None  # None for a session imported before lines were counted
    sha256: str
    entries: int
    originHost: str | None
    originPath: str | None
    pushedAt: datetime | None

    @staticmethod
    def of(session: Session) -> SyncStateOut:
        return SyncStateOut(
            id=session.public_id, sourceId=session.source_id or session.public_id, bytes=session.source_bytes,
            lines=session.source_lines, sha256=session.source_sha256, entries=session.last_seq,
            originHost=session.origin_host, originPath=session.origin_path, pushedAt=session.pushed_at,
        )  # fmt: skip


class SyncPushOut(Schema):
    created: bool
    added: int
    state: SyncStateOut


class CommentIn(Schema):
    entryId: EntryId
    body: str
    parentId: int | None = None


class CommentPatch(Schema):
    body: str | None = None
    resolved: bool | None = None


class CreatedIdOut(Schema):
    id: int


class VerdictIn(Schema):
    entryId: EntryId
    verdict: str  # checked by the service, so a wrong one says which are allowed
    body: str | None = None
    # name -> value, checked against the session's team's score configs (access/team_scores.py);
    # a personal session's are free-form
    scores: dict[str, Any] | None = None


class ReviewRequestIn(Schema):
    reviewer: str | None = None
    team: str | None = None  # the session's team by its slug (its id or name are still taken)
    entryId: EntryId | None = None


class SearchHitOut(Schema):
    sessionId: str
    entryId: str
    snippet: str  # escaped HTML: <mark> is its only markup
    role: str
    timestamp: str
    sessionName: str


class SearchIndexingOut(Schema):
    sessionId: str
    sessionName: str


class SearchOut(Schema):
    hits: list[SearchHitOut]
    next: str | None
    ranked: bool  # whole relevance order; false: newest first (too many matches to rank them all)
    # Only in an incomplete answer: the sessions still being indexed, whose newest entries the hits
    # may miss (search_api sends the contract's three keys otherwise).
    indexing: list[SearchIndexingOut] | None = None
