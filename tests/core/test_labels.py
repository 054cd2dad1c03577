"""tree.labels_in_force: pi's label replay, the one every reader of labels feeds."""

from __future__ import annotations

from sessions_app.core.tree import labels, labels_in_force, node_from_entry
from tests.builders import entry


def label(entry_id: str, target: str, text: str | None, second: int) -> dict[str, object]:
    fields = {"targetId": target} if text is None else {"targetId": target, "label": text}
    return entry(entry_id, None, "label", f"2025-12-08T23:23:{second:02d}.000Z", **fields)


def test_the_last_label_entry_wins_and_an_empty_or_absent_label_clears():
    lines = [
        entry("a", None),
        label("l1", "a", "first", 1),
        label("l2", "b", "bee", 2),
        label("l3", "a", "second", 3),
        label("l4", "b", "", 4),
        label("l5", "c", "sea", 5),
        label("l6", "c", None, 6),
    ]
    in_force = labels_in_force(lines)
    assert list(in_force) == ["a"]
    assert in_force["a"]["label"] == "second"
    assert in_force["a"]["timestamp"] == "2025-12-08T23:23:03.000Z"  # when the label in force was set
    assert labels(node_from_entry(line) for line in lines) == {"a": "second"}


def test_labels_keep_javascript_map_order():
    lines = [label("l1", "a", "x", 1), label("l2", "b", "y", 2), label("l3", "a", "x2", 3)]
    assert list(labels_in_force(lines)) == ["a", "b"]  # a re-set target keeps its place
    lines += [label("l4", "a", "", 4), label("l5", "a", "x3", 5)]
    assert list(labels_in_force(lines)) == ["b", "a"]  # a cleared one leaves; set again, it goes last
