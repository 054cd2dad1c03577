"""Sessions made in piweb (through the services) open in the real pi exactly as piweb shows them.

pi's leaf on load is the file's last line; piweb persists its own leaf, which a leaf_move can put
elsewhere, so contexts are compared at every entry, at both leaves, and at the null leaf.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessions_app.core import context
from sessions_app.models import Session
from sessions_app.store import demo, services
from tests.builders import assistant, tool_result, user
from tests.oracle.oracle import (
    MISSING,
    PiOracle,
    assert_contexts_match,
    assert_listing_matches,
    assert_same_json,
    assert_tree_matches,
    entry_objects,
    export_bytes,
    nodes_of,
    piweb_context,
)

pytestmark = [pytest.mark.oracle, pytest.mark.django_db]

USAGE = {
    "input": 5.0, "output": 120, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 125.0,
    "cost": {"input": 0.000009, "output": 1e-7, "cacheRead": 0.0, "cacheWrite": 2.5e-8, "total": 0.30000000000000004},
}  # fmt: skip


DETAILS = {"exitCode": 0, "10": "ten", "2": "two"}  # integer-like keys, which JavaScript objects put first


def _conversation(alice: Any) -> tuple[Session, dict[str, str]]:
    """One root; every entry type piweb writes; branches, labels, a compaction, a moved leaf."""
    s = services.session_create(owner=alice, name="  Made in piweb  ", cwd="/home/alice/proj")

    def add(payload: dict[str, Any], **kw: Any) -> str:
        return services.entry_append(session=s, payload=payload, author=alice, **kw).entry_id

    ids: dict[str, str] = {}
    add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    add({"type": "thinking_level_change", "thinkingLevel": "medium"})
    ids["q1"] = add(user("List the files, please.", 1_760_000_000_000))
    call = {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls", "2": "b", "1": "a"}}
    ids["a1"] = add(assistant("Listing.", 1_760_000_001_000, usage=USAGE, call=call, stopReason="toolUse"))
    ids["r1"] = add(tool_result("call_1", "a.py\nb.py", 1_760_000_002_000, details=DETAILS))
    ids["a2"] = add(assistant("Two files: a.py and b.py.", 1_760_000_003_000, usage=USAGE))
    ids["cm_hidden"] = add({"type": "custom_message", "customType": "notes", "content": "hidden", "display": False,
                            "details": {"why": "test"}})  # fmt: skip
    ids["custom"] = add({"type": "custom", "customType": "ext-state", "data": {"n": 1, "xs": [1.5, 2.0]}})
    services.label_set(session=s, target_id=ids["q1"], label="question", author=alice)
    services.label_set(session=s, target_id=ids["a2"], label="  answer  ", author=alice)
    ids["q2"] = add(user("Now open a.py.", 1_760_000_004_000))
    ids["a3"] = add(assistant("a.py holds the app.", 1_760_000_005_000, usage=USAGE))
    # A retry: back to a2, another user turn (a sibling of q2).
    services.leaf_move(session=s, entry_id=ids["a2"])
    ids["q2b"] = add(user("Open b.py instead.", 1_760_000_006_000))
    add({"type": "model_change", "provider": "openai", "modelId": "gpt-5.1-codex"})
    ids["a3b"] = add(
        assistant("b.py holds the tests.", 1_760_000_007_000, usage=USAGE, provider="openai", model="gpt-5.1-codex")
    )
    services.label_set(session=s, target_id=ids["q1"], label=None, author=alice)  # cleared
    ids["cm_shown"] = add({"type": "custom_message", "customType": "notes",
                           "content": [{"type": "text", "text": "shown"}], "display": True})  # fmt: skip
    ids["compaction"] = add({"type": "compaction", "summary": "Looked at the files.", "firstKeptEntryId": ids["q2b"],
                             "tokensBefore": 12345, "details": {"readFiles": ["b.py"], "modifiedFiles": []},
                             "fromHook": False})  # fmt: skip
    add({"type": "thinking_level_change", "thinkingLevel": "high"})
    ids["q3"] = add(user("Summarise.", 1_760_000_008_000))
    ids["a4"] = add(assistant("Done.", 1_760_000_009_000, usage=USAGE))
    services.label_set(session=s, target_id=ids["q1"], label="question again", author=alice)
    # Back to q2's answer with a summary of the abandoned branch.
    ids["summary"] = services.branch_with_summary(
        session=s, entry_id=ids["a3"], summary="Explored b.py; came back.",
        details={"readFiles": ["b.py"], "modifiedFiles": []}, from_hook=False, author=alice,
    ).entry_id  # fmt: skip
    ids["q4"] = add(user("Back on a.py.", 1_760_000_010_000))
    ids["a5"] = add(assistant("Still the app.", 1_760_000_011_000, usage=USAGE))
    # An extension's summary, appended as a plain entry (not through branch_with_summary).
    add({"type": "branch_summary", "fromId": ids["a3b"], "summary": "From an extension.", "details": {"2": 2, "1": 1},
         "fromHook": True})  # fmt: skip
    services.session_rename(session=s, name="Renamed in piweb", author=alice)
    # piweb keeps its leaf where it was moved; pi's leaf is the last line.
    services.leaf_move(session=s, entry_id=ids["a4"])
    return s, ids


def _roots(alice: Any) -> Session:
    """Several roots: a new root after leaf_move(None), a branch summary at the root; leaf None."""
    s = services.session_create(owner=alice, cwd="/tmp")
    first = services.entry_append(session=s, payload=user("First root.", 1_760_000_100_000)).entry_id
    services.entry_append(session=s, payload=assistant("One.", 1_760_000_101_000, usage=USAGE))
    services.leaf_move(session=s, entry_id=None)
    services.entry_append(session=s, payload=user("Second root.", 1_760_000_102_000))
    services.entry_append(session=s, payload=assistant("Two.", 1_760_000_103_000, usage=USAGE))
    services.branch_with_summary(session=s, entry_id=None, summary="Started over from the very beginning.")
    services.entry_append(session=s, payload=user("Third root, under a summary.", 1_760_000_104_000))
    services.label_set(session=s, target_id=first, label="first")
    services.session_rename(session=s, name="Named")
    services.session_rename(session=s, name="")  # pi: an empty name clears it
    services.leaf_move(session=s, entry_id=None)
    return s


def _write(session: Session, folder: Path) -> tuple[Path, bytes]:
    data = export_bytes(session)
    path = folder / f"{session.public_id}.jsonl"
    path.write_bytes(data)
    return path, data


def _job(path: Path, data: bytes, session: Session, **extra: Any) -> dict[str, Any]:
    ids = [e["id"] for e in entry_objects(data)]
    return {"file": str(path), "leaves": [*ids, None, MISSING], "tree": True, "info": True, **extra}


def _check(session: Session, data: bytes, pi: dict[str, Any], what: str) -> None:
    """pi's view of piweb's export equals piweb's: contexts everywhere, tree, listing."""
    nodes = nodes_of(data)
    leaves = [n.id for n in nodes]
    assert_contexts_match(session, nodes, leaves, pi["contexts"][: len(leaves)], what)
    null_context, missing_context = pi["contexts"][len(leaves) :]
    assert null_context == {"messages": [], "thinkingLevel": "off", "model": None}
    assert_same_json(context.build_session_context(nodes, MISSING), missing_context, f"{what}: unknown leaf")
    # The leaves: pi's is the last line, piweb's wherever it was left (None gives pi's null-leaf context).
    assert pi["leafId"] == nodes[-1].id
    assert_same_json(piweb_context(session, pi["leafId"]), pi["leafContext"], f"{what}: pi's leaf")
    ours = piweb_context(session)
    if session.leaf_id is None:
        assert_same_json(ours, null_context, f"{what}: null leaf")
    else:
        assert_same_json(ours, pi["contexts"][leaves.index(session.leaf_id)], f"{what}: piweb's leaf")
    assert not pi["rewritten"], what
    assert_tree_matches(session, pi["tree"], what)
    assert_listing_matches(session, {**pi, "leafId": session.leaf_id}, what)


def test_conversation_and_its_fork_open_in_pi_as_in_piweb(alice: Any, pi_oracle: PiOracle, tmp_path: Path) -> None:
    session, ids = _conversation(alice)
    assert session.leaf_id == ids["a4"]
    path, data = _write(session, tmp_path)
    fork_at = ids["q4"]  # labels on the path: q1 ("question again"), a2 ("answer")
    fork = services.session_fork(session=session, entry_id=fork_at, owner=alice)
    fork_path, fork_data = _write(fork, tmp_path)

    (pi, pi_of_fork), (code, reports) = pi_oracle.batch_and_check(
        [_job(path, data, session, forks=[fork_at]), _job(fork_path, fork_data, fork)], [path, fork_path]
    )
    assert code == 0, reports
    assert all(r["ok"] for r in reports), reports
    _check(session, data, pi, "conversation")
    _check(fork, fork_data, pi_of_fork, "fork")

    # piweb's fork is pi's createBranchedSession: the path's lines without its labels, then the
    # resolved labels of path entries re-created (chained, with the timestamp of the label entry
    # that set them). One deliberate difference: pi keeps the parentId of an entry whose parent was
    # a dropped label (an orphan, so pi's fork loses the history above it); piweb re-chains it to
    # the previous kept entry. The fork itself still opens in pi as in piweb (checked above).
    (pi_fork,) = pi["forks"]
    ours, theirs = entry_objects(fork_data), pi_fork["entries"]
    assert [e["type"] for e in ours] == [e["type"] for e in theirs]
    path_len = sum(e["type"] != "label" for e in theirs)
    dropped = {e["id"] for e in entry_objects(data) if e["type"] == "label"}
    rechained = 0
    for i, (mine, pis) in enumerate(zip(ours[:path_len], theirs[:path_len], strict=True)):
        if pis["parentId"] in dropped:
            rechained += 1
            assert mine["parentId"] == ours[i - 1]["id"]
            mine = {**mine, "parentId": pis["parentId"]}
        assert mine == pis
        assert list(mine) == list(pis)
    assert rechained == 1  # q2, whose parent was the label on a2
    fields = ("targetId", "label", "timestamp")
    assert [[e[k] for k in fields] for e in ours[path_len:]] == [[e[k] for k in fields] for e in theirs[path_len:]]
    for i in range(path_len, len(ours)):
        assert ours[i]["parentId"] == ours[i - 1]["id"]
        assert theirs[i]["parentId"] == theirs[i - 1]["id"]
        assert list(ours[i]) == list(theirs[i])
    assert fork.leaf_id == ours[-1]["id"]
    header = pi_fork["header"]
    assert [header["type"], header["version"], header["cwd"]] == ["session", 3, session.cwd]


def test_several_roots_and_a_null_leaf_read_as_in_pi(alice: Any, pi_oracle: PiOracle, tmp_path: Path) -> None:
    session = _roots(alice)
    assert session.leaf_id is None
    path, data = _write(session, tmp_path)
    (pi,), (code, (report,)) = pi_oracle.batch_and_check([_job(path, data, session)], [path])
    # check.mjs wants a single root: this session has three, and that is all it objects to.
    assert code == 1
    assert report["errors"] == ["3 roots, not 1"]
    assert pi["tree"]["roots"] == [n.id for n in nodes_of(data) if n.parent_id is None]
    assert pi["info"]["name"] is None
    _check(session, data, pi, "roots")


def test_demo_sessions_open_in_pi_as_in_piweb(alice: Any, pi_oracle: PiOracle, tmp_path: Path) -> None:
    sessions = demo.demo_sessions_create(owner=alice)
    written = [_write(s, tmp_path) for s in sessions]
    results, (code, reports) = pi_oracle.batch_and_check(
        [_job(path, data, s) for s, (path, data) in zip(sessions, written, strict=True)], [p for p, _ in written]
    )
    assert code == 0, reports
    assert all(r["ok"] for r in reports), reports
    for s, (_, data), pi in zip(sessions, written, results, strict=True):
        _check(s, data, pi, f"demo {s.name}")
