"""Reading pi's built-in tool calls, and the line diff of a replacement."""

from __future__ import annotations

from sessions_app.core.tooluse import Replacement, line_diff, read_range, split_lines, tool_use


def test_the_builtin_shapes_are_read_and_others_are_none():
    edit = tool_use("edit", {"path": "a.py", "oldText": "x", "newText": "y"})
    assert edit is not None and edit.edits == (Replacement("x", "y"),)
    edits = [{"oldText": "1", "newText": "2"}, {"oldText": "3", "newText": ""}]
    multi = tool_use("edit", {"file_path": "b.py", "edits": edits})
    assert multi is not None and multi.path == "b.py" and len(multi.edits) == 2
    write = tool_use("write", {"path": "c.txt", "content": "hi"})
    assert write is not None and write.content == "hi"
    read = tool_use("read", {"path": "d.txt", "offset": 10, "limit": 5})
    assert read is not None and read_range(read) == ":10-14"
    bash = tool_use("bash", {"command": "ls", "timeout": 30})
    assert bash is not None and bash.command == "ls" and bash.timeout == 30
    assert tool_use("grep", {"pattern": "x"}) is None
    assert tool_use("edit", {"path": "a.py", "edits": [{"oldText": 1}]}) is None
    assert tool_use("write", {"path": "a.py"}) is None
    assert tool_use("bash", ["ls"]) is None


def test_line_diff_marks_changes_and_counts_them():
    d = line_diff("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(line.op, line.old, line.new) for line in d.lines] == [
        (" ", 0, 0), ("-", 1, None), ("+", None, 1), (" ", 2, 2), ("+", None, 3),
    ]  # fmt: skip
    assert (d.added, d.removed) == (2, 1)


def test_line_diff_with_context_leaves_gaps():
    lines = [f"line {i}" for i in range(20)]
    old = "\n".join(lines)
    new = "\n".join("changed" if i in (3, 17) else t for i, t in enumerate(lines))
    d = line_diff(old, new, context=1)
    assert [line.op for line in d.lines].count("@") == 1
    assert len(d.lines) < 20


def test_split_lines():
    assert split_lines("") == [] and split_lines("a\n") == ["a"] and split_lines("a\n\n") == ["a", ""]


def test_a_diff_too_big_to_compare_line_by_line_keeps_head_and_tail_and_replaces_the_middle():
    """Hostile text (thousands of repeated lines) must not cost difflib's n*m: past DIFF_WORK line
    pairs, the common head and tail stay and the middle is one replacement."""
    n = 2_500  # 2,500 x 2,500 lines > DIFF_WORK
    old = "head\n" + "x\n" * n + "tail\n"
    new = "head\n" + "y\n" * n + "tail\n"
    d = line_diff(old, new)
    assert (d.added, d.removed) == (n, n)
    assert [line.op for line in d.lines][:2] == [" ", "-"] and d.lines[-1].op == " "
    grouped = line_diff("keep\n" * 10 + old, "keep\n" * 10 + new, context=3)
    assert [line.op for line in grouped.lines].count(" ") == 3 + 1  # three of the eleven head lines, the tail
    assert (grouped.added, grouped.removed) == (n, n)
