"""core/tree.common_ancestor: where two paths to the root meet (pi's branch summary start)."""

from __future__ import annotations

import pytest

from sessions_app.core.tree import Node, TreeIndex, common_ancestor, index


def tree(parents: dict[str, str | None]) -> TreeIndex:
    return index(Node(id=i, parent_id=p, type="message", data={"id": i, "parentId": p}) for i, p in parents.items())


#   r ─ a ─ b ─ c
#         └ d ─ e
#   s (a second root)
TREE = {"r": None, "a": "r", "b": "a", "c": "b", "d": "a", "e": "d", "s": None}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("c", "e", "a"),  # the fork point, not the root
        ("e", "c", "a"),  # either order
        ("c", "b", "b"),  # one is on the other's path: it is the ancestor
        ("b", "c", "b"),
        ("c", "c", "c"),
        ("c", "s", None),  # two roots share nothing
        ("c", None, None),
        (None, "c", None),
        ("c", "missing", None),
    ],
)
def test_the_deepest_entry_on_both_paths(a, b, expected):
    assert common_ancestor(tree(TREE), a, b) == expected


def test_a_missing_parent_ends_the_path_so_nothing_above_it_is_shared():
    idx = tree({"r": None, "a": "r", "x": "gone", "y": "x"})
    assert common_ancestor(idx, "a", "y") is None
    assert common_ancestor(idx, "y", "x") == "x"
