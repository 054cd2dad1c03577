"""A team's reviews for download, as CSV or JSON: one row per verdict and per comment on the team's
sessions (COLUMNS), read a batch at a time by keyset so memory stays bounded whatever the team's
size. Any member of the team may download them (viewers read the same threads on the session page);
the caller has checked that (access.teams.team_get_for_user: outsiders get a 404).

A CSV cell a spreadsheet would run as a formula (starting with = + - @, or a tab or carriage
return) gets a leading apostrophe: bodies, names and session names are anyone's text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from sessions_app.models import VISIBLE, ReviewComment, Session, Team, Verdict
from sessions_app.store.reviews import iso_utc

COLUMNS = (
    "kind", "id", "session_id", "session_name", "entry_id", "author", "created", "verdict", "scores", "body",
    "resolved", "deleted",
)  # fmt: skip
BATCH = 1000
_COMMENT_FIELDS = ("parent__resolved", "parent_id", "deleted_at")
_SESSION_FIELDS = ("pk", "session__public_id", "session__name", "session__first_message", "entry_id")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")  # and full-width = + - @


def _session_name(name: str, first_message: str, public_id: str) -> str:
    return name or first_message[:60] or public_id  # as Session.__str__


def _verdict_rows(sessions: Any, batch: int) -> Iterator[list[dict[str, Any]]]:
    fields = (*_SESSION_FIELDS, "reviewer_username", "created_at", "verdict", "scores", "body")
    after = 0
    while rows := list(
        Verdict.objects.filter(session__in=sessions, pk__gt=after).order_by("pk").values_list(*fields)[:batch]
    ):
        yield [
            {
                "kind": "verdict", "id": pk, "session_id": sid, "session_name": _session_name(name, first, sid),
                "entry_id": entry, "author": who, "created": iso_utc(at), "verdict": kind, "scores": scores,
                "body": body, "resolved": None, "deleted": False,
            }
            for pk, sid, name, first, entry, who, at, kind, scores, body in rows
        ]  # fmt: skip
        after = rows[-1][0]


def _comment_rows(sessions: Any, batch: int) -> Iterator[list[dict[str, Any]]]:
    fields = (*_SESSION_FIELDS, "author_username", "created_at", "body", "resolved", *_COMMENT_FIELDS)
    after = 0
    while rows := list(
        ReviewComment.objects.filter(session__in=sessions, pk__gt=after).order_by("pk").values_list(*fields)[:batch]
    ):
        yield [
            {
                "kind": "comment", "id": pk, "session_id": sid, "session_name": _session_name(name, first, sid),
                "entry_id": entry, "author": who, "created": iso_utc(at), "verdict": None, "scores": None,
                "body": "" if deleted else body, "resolved": parent_resolved if parent else resolved,
                "deleted": deleted is not None,
            }
            for pk, sid, name, first, entry, who, at, body, resolved, parent_resolved, parent, deleted in rows
        ]  # fmt: skip
        after = rows[-1][0]


def team_review_batches(*, team: Team, batch: int = BATCH) -> Iterator[list[dict[str, Any]]]:
    """Every verdict, then every comment, on the team's sessions, in batches (oldest first)."""
    sessions = Session.objects.filter(VISIBLE, team=team).values("pk")
    yield from _verdict_rows(sessions, batch)
    yield from _comment_rows(sessions, batch)


def csv_safe(value: Any) -> str:
    """A CSV cell: None empty, booleans as true/false, objects as JSON; text a spreadsheet would run
    as a formula behind an apostrophe."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, dict | list) else str(value)
    # Leading spaces do not stop a spreadsheet from reading what follows as a formula.
    return "'" + text if text.lstrip(" ").startswith(_FORMULA_START) else text


def team_reviews_csv(*, team: Team, batch: int = BATCH) -> Iterator[bytes]:
    """The CSV, a piece per batch: the header row at once."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    yield out.getvalue().encode()
    for rows in team_review_batches(team=team, batch=batch):
        out.seek(0)
        out.truncate()
        writer.writerows([csv_safe(row[c]) for c in COLUMNS] for row in rows)
        yield out.getvalue().encode()


def team_reviews_json(*, team: Team, batch: int = BATCH) -> Iterator[bytes]:
    """{"team": {"id", "name"}, "reviews": [row, ...]}, a piece per batch."""
    yield json.dumps({"team": {"id": str(team.public_id), "name": team.name}})[:-1].encode() + b', "reviews": ['
    first = True
    for rows in team_review_batches(team=team, batch=batch):
        text = ", ".join(json.dumps(row, ensure_ascii=False) for row in rows)
        yield (text if first else ", " + text).encode()
        first = False
    yield b"]}"
