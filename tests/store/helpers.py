"""Reads and invariant checks shared by the store tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from sessions_app.core.tree import Node
from sessions_app.models import Entry, Session
from sessions_app.store import selectors


def counts() -> tuple[int, int]:
    return Session.objects.count(), Entry.objects.count()


def rows(session: Session) -> list[Entry]:
    return list(Entry.objects.filter(session=session).order_by("seq"))


def snapshot(session: Session) -> list[tuple[Any, ...]]:
    """Every stored column of every entry of the session, to prove nothing changed."""
    return list(Entry.objects.filter(session=session).order_by("seq").values_list())


def nodes(session: Session) -> list[Node]:
    return [selectors.entry_node(e) for e in rows(session)]


def objects(session: Session) -> list[dict[str, Any]]:
    return [json.loads(e.raw) for e in rows(session)]


def export_bytes(session: Session) -> bytes:
    return "".join(selectors.export_lines(session=session)).encode()


def assert_tree(session: Session, *, expected: int | None = None) -> list[Entry]:
    """The session is a sound tree: seq dense 1..N, ids unique, every parent stored, leaf valid,
    raw lines agree with the indexed columns, depth = parent depth + 1."""
    session = Session.objects.get(pk=session.pk)
    stored = rows(session)
    if expected is not None:
        assert len(stored) == expected
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert session.last_seq == len(stored)
    by_id = {e.entry_id: e for e in stored}
    assert len(by_id) == len(stored), "duplicate entry ids"
    for e in stored:
        data = json.loads(e.raw)
        assert (data["id"], data["parentId"], data["type"]) == (e.entry_id, e.parent_id, e.type)
        if e.parent_id is None:
            assert e.depth == 0
        else:
            assert e.parent_id in by_id, f"{e.entry_id}: parent {e.parent_id} missing"
            parent = by_id[e.parent_id]
            assert parent.seq < e.seq, "a parent is stored after its child"
            assert e.depth == parent.depth + 1
        if e.type == "label":
            assert data["targetId"] in by_id
    assert session.leaf_id is None or session.leaf_id in by_id
    return stored


def keys(entry_row: Entry) -> list[str]:
    return list(json.loads(entry_row.raw))


def problems(exc_info: Any) -> list[tuple[int, str]]:
    return [(e["line"], e["message"]) for e in exc_info.value.extra["errors"]]


def lines_of(problems_list: Iterable[Mapping[str, Any]]) -> list[int]:
    return [p["line"] for p in problems_list]
