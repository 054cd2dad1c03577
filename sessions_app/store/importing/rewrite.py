"""pi's one expected rewrite of a synced file: a v1/v2 file migrated to v3 in place.

pi migrates an old file when it opens it and writes it again whole: the same header id, each entry
with new ids (and firstKeptEntryIndex turned into firstKeptEntryId), nothing else changed, and
then pi appends to it. A push of that file would be a changed prefix; this recognises the rewrite
(the same header, and every mirrored entry, ids aside, the same and in the same order) and
replaces the mirror with the migrated file, in one transaction: the old session goes (the one
delete path), the file is imported in its place under the same server id and owner, in the same
team, and the labels reviewers made in piweb are made again on the same messages (by position).
Anything else stays a changed file (409 prefix_changed), never merged.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from sessions_app.core import jsjson
from sessions_app.core.filesource import Source
from sessions_app.errors import SyncConflict
from sessions_app.models import Entry, Session
from sessions_app.store import services
from sessions_app.store.importing import pipeline

ID_KEYS = ("id", "parentId", "firstKeptEntryId", "firstKeptEntryIndex")


def _content(value: Any) -> Any:
    return {k: v for k, v in value.items() if k not in ID_KEYS} if isinstance(value, dict) else value


def _not_a_migration(why: str) -> SyncConflict:
    return SyncConflict(f"the file changed, and not by pi's migration to v3 ({why})", code="prefix_changed")


def _mapping(session: Session, data: bytes) -> dict[str, str]:
    """Stored entry id -> the rewritten file's id, if the file is the mirror migrated by pi."""
    if len(data) > settings.PIWEB_IMPORT_MAX_LEGACY_BYTES:
        raise _not_a_migration("larger than an old file may be")
    lines = [line for line in data.split(b"\n") if line.strip()]
    try:
        header, entries = jsjson.loads(lines[0]), [jsjson.loads(line) for line in lines[1:]]
    except (ValueError, IndexError):
        raise _not_a_migration("a line is not JSON") from None
    if not isinstance(header, dict) or header.get("version") != 3 or header != jsjson.loads(session.header_raw):
        raise _not_a_migration("its header is not the mirror's, migrated")
    ranges = session.mirror_seqs
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("seq", "entry_id", "raw")
    stored = [(entry_id, raw) for seq, entry_id, raw in rows if ranges is None or any(a <= seq <= b for a, b in ranges)]
    if len(stored) > len(entries):
        raise _not_a_migration("it has fewer entries than the mirror")
    mapping = {}
    for (entry_id, raw), new in zip(stored, entries, strict=False):
        if not isinstance(new, dict) or _content(jsjson.loads(raw)) != _content(new) or "id" not in new:
            raise _not_a_migration("an entry differs")
        mapping[entry_id] = str(new["id"])
    return mapping


def mirror_replace_migrated(*, user: User, session: Session, data: bytes, origin: pipeline.Origin) -> Session:
    """Replace the mirror `session` with the file pi migrated it to (SyncConflict otherwise)."""
    mapping = _mapping(session, data)
    ranges = session.mirror_seqs
    labels = [
        (target, label, author_id)
        for seq, target, label, author_id in (
            (e.seq, jsjson.loads(e.raw).get("targetId"), jsjson.loads(e.raw).get("label"), e.author_id)
            for e in Entry.objects.filter(session=session, type="label").order_by("seq")
        )
        if ranges is not None and not any(first <= seq <= last for first, last in ranges)
    ]
    owner, team_id = session.owner, session.team_id
    with transaction.atomic():
        services.session_delete(session=session)
        result = pipeline.session_import(
            owner=owner, data=Source(data), source_path=session.source_path, origin=origin, in_place=True
        )
        new = result.session
        if team_id is not None:
            Session.objects.filter(pk=new.pk).update(team_id=team_id)
            new.team_id = team_id
        authors = {u.pk: u for u in User.objects.filter(pk__in={a for _, _, a in labels if a is not None})}
        for target, label, author_id in labels:
            if target in mapping:
                services.label_set(
                    session=new, target_id=mapping[target], label=label, author=authors.get(author_id or 0, user)
                )
    new.refresh_from_db()
    return new
