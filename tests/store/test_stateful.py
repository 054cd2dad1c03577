"""A hypothesis state machine drives the real services against a tiny in-memory model of pi's
session (entries in file order, leaf, labels) and checks after every step that the database,
the selectors, the context and the export all still agree with the model."""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sessions_app.core import intake
from sessions_app.core.context import build_session_context
from sessions_app.core.tree import node_from_entry, session_name
from sessions_app.models import Session
from sessions_app.store import selectors, services
from sessions_app.store.importing import pipeline
from tests.store.helpers import assert_tree, export_bytes, objects

pytestmark = pytest.mark.django_db

USERS = itertools.count()
EMPTY_CONTEXT: dict[str, Any] = {"messages": [], "thinkingLevel": "off", "model": None}

KINDS = ["user", "assistant", "model", "thinking", "custom", "custom_message", "compaction", "session_info"]
PICK = st.integers(min_value=-10_000, max_value=10_000)  # negative: counted from the newest
TEXT = st.sampled_from(["", " ", "a", "hello", " padded ", "ünïcødé ✓", "x" * 40])


def payload(kind: str, text: str, pick: int, ids: list[str]) -> dict[str, Any]:
    if kind == "user":
        return {
            "type": "message",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": abs(pick)},
        }
    if kind == "assistant":
        message = {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
                   "provider": f"p{pick % 2}", "model": f"m{pick % 3}", "stopReason": "stop",
                   "timestamp": abs(pick)}  # fmt: skip
        return {"type": "message", "message": message}
    if kind == "model":
        return {"type": "model_change", "provider": "prov", "modelId": f"model-{pick % 4}"}
    if kind == "thinking":
        return {"type": "thinking_level_change", "thinkingLevel": ["off", "low", "high"][pick % 3]}
    if kind == "custom":
        return {"type": "custom", "customType": "ext", "data": {"n": pick, "f": pick / 7}}
    if kind == "custom_message":
        return {"type": "custom_message", "customType": "ext", "content": text, "display": pick % 2 == 0}
    if kind == "compaction":
        obj: dict[str, Any] = {"type": "compaction", "summary": f"summary {text}", "tokensBefore": abs(pick)}
        if ids and pick % 4:
            obj["firstKeptEntryId"] = ids[pick % len(ids)]  # on the path or not, labels included
        return obj
    return {"type": "session_info", "name": text}


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()  # each example is rolled back
        self._atomic.__enter__()
        self.owner = User.objects.create_user(f"machine{next(USERS)}")
        self.session = services.session_create(owner=self.owner)
        self.entries: dict[str, dict[str, Any]] = {}  # id -> entry object, file order
        self.leaf: str | None = None
        self.labels: dict[str, str] = {}  # pi's labelsById (a JS Map: insertion order)

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    # --- model helpers ---------------------------------------------------------------------

    @property
    def ids(self) -> list[str]:
        return list(self.entries)

    def nodes(self, entries: dict[str, dict[str, Any]] | None = None) -> list[Any]:
        return [node_from_entry(e) for e in (self.entries if entries is None else entries).values()]

    def context_at(self, leaf: str | None) -> dict[str, Any]:
        return dict(EMPTY_CONTEXT) if leaf is None else build_session_context(self.nodes(), leaf)

    def path(self, leaf: str) -> list[dict[str, Any]]:
        path, node = [], self.entries.get(leaf)
        while node is not None:
            path.append(node)
            node = self.entries.get(node["parentId"]) if node["parentId"] is not None else None
        return path[::-1]

    def added(self, entry: Any, parent: str | None, kind: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(entry.raw)
        assert data["id"] not in self.entries
        assert data["parentId"] == parent
        if kind is not None:
            assert data["type"] == kind
        self.entries[data["id"]] = data
        self.leaf = data["id"]
        return data

    # --- rules -----------------------------------------------------------------------------

    @initialize(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=6), labelled=st.booleans(), text=TEXT)
    def start(self, kinds, labelled, text):
        """Begin with a short chain (and maybe a label inside it), so every example has a tree."""
        for i, kind in enumerate(kinds):
            self.append(kind, "leaf", i, text)
            if labelled and i == 0:
                self.label(0, "first")

    @rule(kind=st.sampled_from(KINDS), where=st.sampled_from(["leaf", "leaf", "parent", "root"]), pick=PICK, text=TEXT)
    def append(self, kind, where, pick, text):
        body = payload(kind, text, pick, self.ids)
        if where == "leaf" or not self.entries:
            parent, entry = self.leaf, services.entry_append(session=self.session, payload=body, author=self.owner)
        else:
            parent = None if where == "root" else self.ids[pick % len(self.ids)]
            entry = services.entry_append(session=self.session, payload=body, parent_id=parent, author=self.owner)
        assert entry.author_id == self.owner.pk
        self.added(entry, parent, body["type"])

    @rule(pick=PICK, to_none=st.booleans())
    def move(self, pick, to_none):
        target = None if to_none or not self.entries else self.ids[pick % len(self.ids)]
        services.leaf_move(session=self.session, entry_id=target)
        self.leaf = target

    @precondition(lambda self: self.entries)
    @rule(pick=PICK, text=TEXT)
    def label(self, pick, text):
        target = self.ids[pick % len(self.ids)]
        parent = self.leaf
        data = self.added(services.label_set(session=self.session, target_id=target, label=text), parent, "label")
        assert data["targetId"] == target
        if text.strip():
            assert data["label"] == text.strip()
            self.labels[target] = text.strip()  # a re-set key keeps its place
        else:
            assert "label" not in data
            self.labels.pop(target, None)

    @rule(pick=PICK, at_root=st.booleans(), text=TEXT)
    def branch(self, pick, at_root, text):
        target = None if at_root or not self.entries else self.ids[pick % len(self.ids)]
        entry = services.branch_with_summary(session=self.session, entry_id=target, summary=text)
        data = self.added(entry, target, "branch_summary")
        assert data["fromId"] == (target or "root")
        assert data["summary"] == text

    @precondition(lambda self: self.entries)
    @rule(pick=PICK, at_leaf=st.booleans())
    def fork(self, pick, at_leaf):
        target = self.leaf if at_leaf and self.leaf else self.ids[pick % len(self.ids)]
        fork = services.session_fork(session=self.session, entry_id=target, owner=self.owner)
        # Expected: the path minus labels, re-chained over dropped labels, then the labels.
        expected: dict[str, dict[str, Any]] = {}
        parent, pending, replacement = None, [], {}
        for node in self.path(target):
            if node["type"] == "label":
                pending.append(node["id"])
                continue
            replacement.update(dict.fromkeys(pending, node["id"]))
            pending = []
            obj = {**node, "parentId": parent}
            if obj["type"] == "compaction" and obj.get("firstKeptEntryId") in replacement:
                obj["firstKeptEntryId"] = replacement[obj["firstKeptEntryId"]]
            expected[obj["id"]] = obj
            parent = obj["id"]
        stored = objects(fork)
        assert stored[: len(expected)] == list(expected.values())
        new_labels = stored[len(expected) :]
        assert [(o["type"], o["targetId"], o["label"]) for o in new_labels] == [
            ("label", t, v) for t, v in self.labels.items() if t in expected
        ]
        assert [o["parentId"] for o in new_labels] == [parent, *(o["id"] for o in new_labels)][: len(new_labels)]
        assert_tree(fork, expected=len(stored))
        last = stored[-1]["id"] if stored else None
        assert Session.objects.get(pk=fork.pk).leaf_id == last
        got = selectors.session_context(session=fork)
        assert {k: got[k] for k in EMPTY_CONTEXT} == self.context_at(target)
        assert "parentSession" not in json.loads(fork.header_raw)
        assert fork.parent_session_id == self.session.pk

    @precondition(lambda self: len(self.entries) >= 2)
    @rule(by_owner=st.booleans())
    def round_trip(self, by_owner):
        exported = export_bytes(self.session)
        stranger = User.objects.create_user(f"stranger{next(USERS)}")
        # Another account's import of the same file: their own session under a new server id, pi's
        # id kept as its source id, the file exported byte for byte.
        theirs = pipeline.session_import(owner=stranger, data=exported)
        assert theirs.created and theirs.session.public_id != self.session.public_id
        assert theirs.session.source_id == self.session.public_id
        assert export_bytes(theirs.session) == exported
        header, _, body = exported.partition(b"\n")
        renamed = json.loads(header)
        renamed["id"] = str(uuid.uuid4())
        copy = pipeline.session_import(
            owner=stranger, data=json.dumps(renamed, separators=(",", ":")).encode() + b"\n" + body
        )
        assert copy.created
        assert copy.added == len(self.entries)
        assert objects(copy.session) == list(self.entries.values())
        assert export_bytes(copy.session).partition(b"\n")[2] == body
        last = self.ids[-1] if self.entries else None
        assert copy.session.leaf_id == last  # pi's leaf on load: the last line
        got = selectors.session_context(session=copy.session)
        assert {k: got[k] for k in EMPTY_CONTEXT} == self.context_at(last)
        if by_owner:  # the owner re-importing their own export adds nothing and keeps the leaf
            again = pipeline.session_import(owner=self.owner, data=exported)
            assert (again.created, again.added) == (False, 0)
            assert Session.objects.get(pk=self.session.pk).leaf_id == self.leaf

    @rule()
    def reload(self):
        self.session = Session.objects.get(pk=self.session.pk)

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def store_matches_model(self):
        stored = assert_tree(self.session, expected=len(self.entries))  # also re-reads the session
        assert [json.loads(e.raw) for e in stored] == list(self.entries.values())
        fresh = Session.objects.get(pk=self.session.pk)
        assert fresh.leaf_id == self.leaf
        assert list(selectors.labels(session=fresh).items()) == list(self.labels.items())
        assert fresh.name == (session_name(self.nodes()) or "")
        assert fresh.message_count == sum(1 for e in self.entries.values() if e["type"] == "message")
        # The context at the leaf, and at the newest entry (often on another branch).
        assert selectors.session_context(session=fresh) == {"leafId": self.leaf, **self.context_at(self.leaf)}
        if self.entries and self.ids[-1] != self.leaf:
            last = self.ids[-1]
            assert selectors.session_context(session=fresh, leaf_id=last) == {"leafId": last, **self.context_at(last)}
        # Export, then read it back as an import would.
        read = intake.read_file(export_bytes(fresh))
        assert read.problems == []
        assert [p.line.data for p in read.placed] == list(self.entries.values())
        assert read.leaf_id == (self.ids[-1] if self.entries else None)


def test_the_store_agrees_with_a_model_of_pi():
    run_state_machine_as_test(
        SessionMachine,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
