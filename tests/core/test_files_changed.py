"""The branch's "Files changed": which calls count, and how edits compose into the net change."""

from __future__ import annotations

from typing import Any

from sessions_app.core.files_changed import files_changed, normal_path
from sessions_app.core.tree import Node
from tests.builders import assistant, tool_result


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def path_of(*steps: tuple[dict[str, Any], bool | None]) -> list[Node]:
    """Nodes for (call, error?) steps: an assistant entry with the call, then its result unless
    error is None (no result: the call never ran)."""
    nodes: list[Node] = []
    for n, (c, error) in enumerate(steps):
        nodes.append(Node(f"a{n}", nodes[-1].id if nodes else None, "message", assistant("", call=c)))
        if error is not None:
            result = tool_result(c["id"], "ok", 1, tool=c["name"], isError=error)
            nodes.append(Node(f"r{n}", nodes[-1].id, "message", result))
    return nodes


def test_a_written_file_takes_later_edits_into_one_net_diff():
    files = files_changed(path_of(
        (call("c1", "write", path="./src/a.py", content="x = 1\ny = 2\n"), False),
        (call("c2", "edit", path="src/a.py", oldText="y = 2", newText="y = 3"), False),
        (call("c3", "edit", path="src/a.py", edits=[{"oldText": "x = 1", "newText": "x = 0"}]), False),
    ))  # fmt: skip
    assert [f.path for f in files] == ["src/a.py"]
    f = files[0]
    assert [(c.entry_id, c.tool) for c in f.changes] == [("a0", "write"), ("a1", "edit"), ("a2", "edit")]
    assert [(h.before, h.after) for h in f.net] == [("", "x = 0\ny = 3\n")]


def test_edits_of_an_unknown_file_compose_within_a_hunk_and_keep_apart_otherwise():
    files = files_changed(path_of(
        (call("c1", "edit", path="b.ts", oldText="let a = 1;", newText="let a = 2;"), False),
        (call("c2", "edit", path="b.ts", oldText="a = 2", newText="a = 3"), False),
        (call("c3", "edit", path="b.ts", oldText="other()", newText="other(1)"), False),
    ))  # fmt: skip
    assert [(h.before, h.after) for h in files[0].net] == [("let a = 1;", "let a = 3;"), ("other()", "other(1)")]


def test_failed_and_unanswered_calls_change_nothing():
    files = files_changed(path_of(
        (call("c1", "write", path="a.txt", content="one"), True),
        (call("c2", "write", path="b.txt", content="two"), None),
        (call("c3", "bash", command="rm -rf /"), False),
        (call("c4", "read", path="c.txt"), False),
    ))  # fmt: skip
    assert files == []


def test_a_multi_edit_is_matched_against_the_original_and_a_missing_old_text_becomes_a_hunk():
    files = files_changed(path_of(
        (call("c1", "write", path="m.md", content="alpha\nbeta\ngamma\n"), False),
        (call("c2", "edit", path="m.md", edits=[
            {"oldText": "gamma", "newText": "GAMMA"}, {"oldText": "alpha", "newText": "ALPHA"},
            {"oldText": "not there", "newText": "x"},
        ]), False),
    ))  # fmt: skip
    assert [(h.before, h.after) for h in files[0].net] == [("", "ALPHA\nbeta\nGAMMA\n"), ("not there", "x")]


def test_a_write_supersedes_earlier_edits_and_an_undone_edit_is_no_net_change():
    files = files_changed(path_of(
        (call("c1", "edit", path="w.py", oldText="a", newText="b"), False),
        (call("c2", "write", path="w.py", content="fresh\n"), False),
        (call("c3", "edit", path="u.py", oldText="keep", newText="tmp"), False),
        (call("c4", "edit", path="u.py", oldText="tmp", newText="keep"), False),
    ))  # fmt: skip
    w, u = files
    assert [(h.before, h.after) for h in w.net] == [("", "fresh\n")] and len(w.changes) == 2
    assert u.unchanged and [c.call_id for c in u.changes] == ["c3", "c4"]


def test_paths_are_normalised():
    assert normal_path("./a//b/../c.py") == "a/c.py"
