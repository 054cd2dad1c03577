"""context.entry_message: the one entry -> message rule, used by the context and by summaries."""

from __future__ import annotations

from sessions_app.core import compaction
from sessions_app.core.context import build_session_context, entry_message
from sessions_app.core.tree import node_from_entry
from tests.builders import entry, user

MS = 1_765_236_180_000


def test_each_kind_stands_for_pis_message():
    assert entry_message(node_from_entry(entry("u", None, message=user("hi")["message"]))) == user("hi")["message"]
    custom = entry("c", None, "custom_message", customType="note", content="x", display=True)
    assert entry_message(node_from_entry(custom)) == {
        "role": "custom", "customType": "note", "content": "x", "display": True, "timestamp": MS,
    }  # fmt: skip
    assert entry_message(node_from_entry(entry("b", None, "branch_summary", fromId="f", summary=""))) == {
        "role": "branchSummary", "summary": "", "fromId": "f", "timestamp": MS,
    }  # fmt: skip
    compacted = entry("k", None, "compaction", summary="s", firstKeptEntryId="u", tokensBefore=9)
    assert entry_message(node_from_entry(compacted)) == {
        "role": "compactionSummary", "summary": "s", "tokensBefore": 9, "timestamp": MS,
    }  # fmt: skip
    assert entry_message(node_from_entry(entry("l", None, "label", targetId="u", label="x"))) is None


def test_the_context_leaves_out_an_empty_branch_summary_that_a_branch_summary_reads():
    """pi's buildSessionContext skips a branch summary without text; branch summarization keeps it."""
    nodes = [
        node_from_entry(entry("u", None, message=user("hi")["message"])),
        node_from_entry(entry("b", "u", "branch_summary", fromId="x", summary="")),
        node_from_entry(entry("u2", "b", message=user("again")["message"])),
    ]
    assert [m["role"] for m in build_session_context(nodes, "u2")["messages"]] == ["user", "user"]
    prepared = compaction.prepare_branch_entries(nodes)
    assert [m["role"] for m in prepared.messages] == ["user", "branchSummary", "user"]
    assert prepared.messages[1] == entry_message(nodes[1])
