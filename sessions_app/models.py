"""Sessions and their append-only entries. Thin: fields and constraints; logic is in services."""

from __future__ import annotations

from uuid import uuid4

from django.conf import settings
from django.db import models


class Session(models.Model):
    # The server id, used in URLs and API: pi's session id (the header's id) when it was free,
    # else a new UUID (another account holds pi's id).
    public_id = models.CharField(max_length=200, unique=True)
    # pi's session id for an imported session (header_raw keeps it too); re-import finds the
    # importer's copy by it (importing.pipeline). Null for sessions made in piweb. Nullable without
    # default so that SQLite adds the column in place (see entries_digest).
    source_id = models.CharField(max_length=200, null=True, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pi_sessions")
    header_raw = models.TextField()  # the header line exactly as it will be exported
    extra_headers = models.JSONField(default=list, blank=True)  # [[entries before it, raw line]]
    cwd = models.TextField(blank=True, default="")
    created = models.CharField(max_length=64)  # header timestamp, ISO string as in the file
    parent_session = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    # None: personal, private to the owner. Set: the team's members see it by their role (access.py).
    # Nullable without default so that SQLite adds the column in place (see entries_digest).
    team = models.ForeignKey("Team", null=True, blank=True, on_delete=models.PROTECT, related_name="sessions")
    # Persisted leaf (pi keeps it in memory only); null = the next append starts a new root.
    leaf_id = models.CharField(max_length=200, null=True, blank=True)
    # Listing fields, maintained by the services as entries arrive.
    name = models.TextField(blank=True, default="")
    message_count = models.PositiveIntegerField(default=0)
    first_message = models.TextField(blank=True, default="")
    modified_ms = models.BigIntegerField(default=0)  # pi's "modified": last user/assistant message time
    # Summed over every assistant message (core/usage.py), kept by the listing like message_count:
    # the session list's cost column reads no entry.
    cost = models.FloatField(default=0.0)
    total_tokens = models.BigIntegerField(default=0)
    last_seq = models.PositiveIntegerField(default=0)
    # Running HMAC over the entries' chain hashes in seq order (services.session_digest).
    # Nullable without default so that SQLite adds the column in place: rebuilding this table
    # trips the entry triggers that refer to it.
    entries_digest = models.CharField(max_length=64, null=True, blank=True)
    # Import bookkeeping: the source file and how much of it is stored.
    source_path = models.TextField(blank=True, default="")
    source_bytes = models.BigIntegerField(default=0)
    source_sha256 = models.CharField(max_length=64, blank=True, default="")
    import_report = models.JSONField(default=list, blank=True)  # lines skipped by a partial import
    # Sync (the `piweb sync` client): how many lines of the source file are stored, and where a
    # mirrored session comes from (the pushing machine and the file's path there) and when it was
    # last pushed. Nullable without default (see entries_digest).
    source_lines = models.BigIntegerField(null=True, blank=True)
    origin_host = models.CharField(max_length=255, null=True, blank=True)
    origin_path = models.TextField(null=True, blank=True)
    pushed_at = models.DateTimeField(null=True, blank=True)
    # The seqs of the entries that came from the source file, as [[first, last], ...]; the others
    # were made in piweb (labels, chat), and a mirror's pull leaves them out. Null: all of them (a
    # session made in piweb, or imported before this was kept).
    mirror_seqs = models.JSONField(null=True, blank=True)
    # Readers skip a session so marked. It lets nothing past the entry trigger (migration 0007), and
    # piweb never commits it set (session_delete removes the row at once): verify_sessions reports it.
    deleting = models.BooleanField(default=False)
    # True while an import stages rows in this session (store/importing/pipeline.py): no reader
    # or other writer sees it (VISIBLE) until the import publishes it, or deletes it whole.
    # NULL once published (nullable without default: SQLite adds the column in place).
    staging = models.BooleanField(null=True, blank=True)
    # Search (store/search_index.py): NULL when every entry is indexed; else the seq up to which
    # entries are, the rest waiting for the background indexer ("indexing…"). Nullable without
    # default (see entries_digest): existing sessions are indexed.
    indexed_seq = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [
            models.Index(fields=["owner", "-updated_at"]),
            models.Index(fields=["source_id"], name="session_source_id"),
        ]

    def __str__(self) -> str:
        return self.name or self.first_message[:60] or self.public_id


# The sessions readers and writers may see: every query of sessions starts from it (or, for one
# session, from permissions.session_access). Not one being deleted, nor an import's staging.
VISIBLE = models.Q(deleting=False, staging__isnull=True)
# Columns that may be large: lists never load them (the export and the import read them).
BIG_COLUMNS = ("extra_headers", "import_report", "header_raw", "mirror_seqs")


class Entry(models.Model):
    """One line of the session file. Never updated; deleted only with its whole session
    (database triggers enforce both)."""

    # No single-column indexes: the (session, ...) constraints and indexes below cover them.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="entries", db_index=False)
    seq = models.PositiveIntegerField()  # file order, dense from 1 within the session
    entry_id = models.CharField(max_length=200)
    parent_id = models.CharField(max_length=200, null=True, blank=True)
    type = models.CharField(max_length=64)
    role = models.CharField(max_length=64, null=True, blank=True)
    timestamp = models.CharField(max_length=64)
    ts_ms = models.BigIntegerField()
    raw = models.TextField()  # the exact JSON line
    preview = models.TextField(default="")  # one line for tree rows and search (tree.row_text)
    depth = models.PositiveIntegerField()  # 0 for a root
    # Path state at this entry, so a context never has to walk past the last compaction.
    ctx_thinking = models.TextField(default='"off"')  # JSON text of the thinking level
    ctx_model = models.TextField(null=True)  # JSON text of {provider, modelId}, or null
    ctx_compaction_id = models.CharField(max_length=200, null=True)
    # On compactions: the first kept entry if it is an ancestor (where context walks stop).
    kept_from_id = models.CharField(max_length=200, null=True)
    # Kept as written even if the user goes away: entries are history, never rewritten.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # SHA-256 of the parent's chain_hash and this line (services.entry_chain_hash): tamper evidence.
    # Nullable only so that SQLite can add the column in place (a table rebuild drops triggers).
    chain_hash = models.CharField(max_length=64, null=True)

    class Meta:
        ordering = ["session", "seq"]
        verbose_name_plural = "entries"
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="entry_unique_seq"),
            models.UniqueConstraint(fields=["session", "entry_id"], name="entry_unique_id"),
        ]
        indexes = [
            models.Index(fields=["session", "parent_id", "ts_ms"], name="entry_children"),
            # Labels are replayed on every tree read; a partial index keeps that cheap to maintain.
            models.Index(fields=["session", "seq"], name="entry_labels", condition=models.Q(type="label")),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.entry_id}"


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=12, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)  # sha256 of the whole token
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=10, default="write")  # "read" (GET only) or "write"
    expires_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class StreamingTurn(models.Model):
    """One assistant turn while it streams: mutable, unlike entries. The partial message is flushed
    here as it grows, so a viewer (re)connecting or a restart after a crash can pick it up; when the
    turn ends its message becomes an entry (entry_id) and this row is only history."""

    STATUSES = ("queued", "streaming", "done", "aborted", "error")

    public_id = models.UUIDField(unique=True, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    parent_id = models.CharField(max_length=200, null=True)  # the entry the reply will hang off
    status = models.CharField(max_length=16, default="queued")
    abort_requested = models.BooleanField(default=False)
    model = models.JSONField(default=dict)  # {"api", "provider", "id"} the turn runs with
    partial = models.JSONField(null=True)  # pi AssistantMessage so far
    last_index = models.PositiveIntegerField(default=0)  # index of the last published delta
    entry_id = models.CharField(max_length=200, null=True)  # the assistant entry, once saved
    runner = models.CharField(max_length=200, blank=True, default="")  # host:pid of the process running it
    heartbeat_at = models.DateTimeField(null=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["session", "status"], name="turn_session_status")]

    def __str__(self) -> str:
        return f"turn {self.public_id} ({self.status})"


class Viewer(models.Model):
    """One open websocket on a session (presence). Rows of a process that died expire by seen_at."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="viewers")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    channel_name = models.CharField(max_length=200, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.user_id} on {self.session_id}"


class Team(models.Model):
    """A group of users sharing sessions; what each may do is their Membership role (access.py)."""

    public_id = models.UUIDField(default=uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)  # from the name (access/teams.py), admins edit it
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


TEAM_ROLES = ("viewer", "reviewer", "editor", "admin")


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=[(r, r) for r in TEAM_ROLES])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_user"),
            models.CheckConstraint(condition=models.Q(role__in=TEAM_ROLES), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.team_id} as {self.role}"


class ShareLink(models.Model):
    """A read-only link to a session, or to one branch of it (entry_id: the path to that entry and
    everything below it). Only a SHA-256 of the token is stored."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links")
    entry_id = models.CharField(max_length=200, null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_viewed_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0)
    # The creator's choice: the page shows review threads and verdicts (only those in its scope).
    include_comments = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"share {self.prefix}… of {self.session_id}"


class AuditRecord(models.Model):
    """One audited action. Append-only (database triggers refuse UPDATE and DELETE) and hash-chained:
    `hash` is an HMAC over the record's canonical content and the previous record's hash, so a
    changed, removed or inserted record is found by `manage.py verify_audit` (sessions_app.access.audit)."""

    seq = models.BigIntegerField(unique=True)  # dense from 1, global
    at = models.DateTimeField()
    # A snapshot: the username as it was, kept even if the user is renamed or removed.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_username = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=64)
    obj_type = models.CharField(max_length=32, blank=True, default="")
    obj_id = models.CharField(max_length=200, blank=True, default="")
    session_id = models.CharField(max_length=200, blank=True, default="")  # public id, for filtering
    ip = models.CharField(max_length=45, blank=True, default="")  # normalized by audit.client_ip
    request_id = models.CharField(max_length=64, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    extra = models.JSONField(null=True, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["-seq"]
        indexes = [
            models.Index(fields=["action", "seq"], name="audit_action"),
            models.Index(fields=["session_id", "seq"], name="audit_session"),
            models.Index(fields=["actor_username", "seq"], name="audit_actor"),
            models.Index(fields=["at"], name="audit_at"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.obj_type} {self.obj_id}"


class AuditHead(models.Model):
    """The audit chain's head (one row): writers lock it, so the chain never forks, and it
    remembers the last record, so removing records from the end is noticed too."""

    seq = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return f"audit head #{self.seq}"


class ReviewComment(models.Model):
    """One comment of a review thread on an entry. About the tree, never part of it: not an entry,
    not in the JSONL export or any context. A reply has parent (the thread's root comment); the
    thread's resolved flag lives on its root. body_html is the sanitised markdown, made once when
    the body is written; a deleted comment keeps its row (deleted_at) as a tombstone."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="review_comments")
    entry_id = models.CharField(max_length=200)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    author_username = models.CharField(max_length=150)  # kept if the user goes away
    body = models.TextField()
    body_html = models.TextField()
    mentions = models.JSONField(default=list, blank=True)  # usernames of team members mentioned
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "id"]
        indexes = [models.Index(fields=["session", "entry_id"], name="review_comment_entry")]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.entry_id}"


VERDICTS = ("approved", "changes_requested", "flagged")


class Verdict(models.Model):
    """A reviewer's judgement of the path from the root to entry_id. Never updated: a reviewer's
    latest verdict on an entry is the one in force; later children of the entry do not change what
    it judged ("reviewed up to here")."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="verdicts")
    entry_id = models.CharField(max_length=200)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reviewer_username = models.CharField(max_length=150)
    verdict = models.CharField(max_length=20, choices=[(v, v) for v in VERDICTS])
    body = models.TextField(blank=True, default="")
    body_html = models.TextField(blank=True, default="")
    scores = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "id"]
        indexes = [models.Index(fields=["session", "entry_id"], name="verdict_entry")]
        constraints = [models.CheckConstraint(condition=models.Q(verdict__in=VERDICTS), name="verdict_valid")]

    def __str__(self) -> str:
        return f"{self.verdict} on {self.entry_id}"


SCORE_KINDS = ("numeric", "categorical", "boolean")


class ScoreConfig(models.Model):
    """A score a team's verdicts may carry (like Langfuse's score configs): numeric within
    [min_value, max_value] (either bound optional), categorical (one of choices) or boolean."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="score_configs")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=12, choices=[(k, k) for k in SCORE_KINDS])
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    choices = models.JSONField(default=list, blank=True)  # the categories, for categorical
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="score_config_unique_name"),
            models.CheckConstraint(condition=models.Q(kind__in=SCORE_KINDS), name="score_config_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} score {self.name}"


class ReviewRequest(models.Model):
    """A request that a team member (reviewer) or the whole team (team) review a team session, or
    the branch up to entry_id. Grants nothing: the reviewer reads the session through their role.
    Done (done_at) at the first verdict by that reviewer, or for a team request by any member."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="review_requests")
    entry_id = models.CharField(max_length=200, null=True, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="review_requests"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="review_requests")
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)
    verdict = models.ForeignKey(Verdict, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(reviewer__isnull=False, team__isnull=True)
                | models.Q(reviewer__isnull=True, team__isnull=False),
                name="review_request_one_target",
            )
        ]

    def __str__(self) -> str:
        return f"review request {self.pk} on {self.session_id}"


class ReviewEmailOptOut(models.Model):
    """A user who wants no review emails (requests, mentions): the row's presence is the choice."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"no review emails for {self.user_id}"


class SearchDoc(models.Model):
    """One searchable text of an entry (core/searchtext.py), kept by store/search_index.py. The
    full-text index over `text` is the database's own (migration 0012): an FTS5 external-content
    table on SQLite, a tsvector column with a GIN index on PostgreSQL."""

    session = models.ForeignKey(Session, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    seq = models.PositiveIntegerField()  # of the entry it comes from (a label's own seq, not its target's)
    entry_id = models.CharField(max_length=200)  # where a hit lands
    kind = models.CharField(max_length=16)
    role = models.CharField(max_length=64, blank=True, default="")
    tool = models.TextField(blank=True, default="")
    model = models.TextField(blank=True, default="")
    ts_ms = models.BigIntegerField()
    text = models.TextField()

    class Meta:
        indexes = [
            models.Index(fields=["session", "seq"], name="searchdoc_session_seq"),
            models.Index(fields=["ts_ms"], name="searchdoc_ts"),
            # A label set or cleared replaces the one in force on its target (search_index.write_rows):
            # found here, not by reading every document of the session at each indexed batch.
            models.Index(
                fields=["session", "entry_id"], condition=models.Q(kind="label"), name="searchdoc_label_target"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.entry_id}"


class MessageSpan(models.Model):
    """Where a message entry's stored line holds its message's JSON (core.context.message_span):
    the context serves those bytes without parsing the line. Kept by store/message_spans.py beside
    the search index (entries themselves are never updated); an entry without one is read through
    the database's JSON functions."""

    # No index of its own: the (session, seq) constraint covers it.
    session = models.ForeignKey(
        Session, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    seq = models.PositiveIntegerField()  # the entry's
    start = models.PositiveIntegerField()  # 1-based byte offset in the line's UTF-8, as SQL's substr counts
    length = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="messagespan_session_seq")]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq}"


class RunStart(models.Model):
    """An entry whose parent is not the entry just before it in file order (a root, or the first
    entry of a branch): between two of them, each entry's parent is the one before it, so a path
    is a few ranges of seqs (store/run_starts.py). Kept beside the search index, as MessageSpan;
    a path without them is walked entry by entry."""

    # No index of its own: the (session, seq) constraint covers it.
    session = models.ForeignKey(
        Session, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    seq = models.PositiveIntegerField()  # the entry's

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="runstart_session_seq")]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq}"
