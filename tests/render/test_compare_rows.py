"""render/compare.py: rows paired from the common ancestor, word diffs within the page's budget."""

from __future__ import annotations

from typing import Any

from sessions_app.core import compare
from sessions_app.core.tree import Node
from sessions_app.render import compare as render_compare
from tests.builders import assistant, user


def node(entry_id: str, payload: dict[str, Any]) -> Node:
    return Node(id=entry_id, parent_id=None, type=payload["type"], data={"id": entry_id, **payload})


def test_rows_pair_entries_in_order_and_diff_only_messages_that_differ():
    a = [node("a1", user("same question")), node("a2", assistant("red fox"))]
    b = [node("b1", user("same question")), node("b2", assistant("blue fox")), node("b3", user("more"))]
    rows = render_compare.rows(a, b)
    assert [(x and x.shown.id, y and y.shown.id) for x, y in rows] == [("a1", "b1"), ("a2", "b2"), (None, "b3")]
    assert rows[0][0] is not None and rows[0][0].diff is None  # equal texts: drawn as they are
    assert rows[1][0] is not None and rows[1][0].diff == '<del class="wd">red</del> fox'
    assert rows[1][1] is not None and rows[1][1].diff == '<ins class="wd">blue</ins> fox'


def test_a_spent_page_budget_still_marks_the_change_but_trims_the_work(monkeypatch):
    a = [node("a1", assistant("x same y"))]
    b = [node("b1", assistant("z same w"))]
    left, _ = render_compare.rows(a, b)[0]
    assert left is not None and left.diff == '<del class="wd">x</del> same <del class="wd">y</del>'  # difflib's
    monkeypatch.setattr(compare, "PAGE_WORK", 0)
    left, right = render_compare.rows(a, b)[0]
    assert left is not None and right is not None
    assert left.diff == '<del class="wd">x same y</del>'  # no common head or tail: one replacement
    assert right.diff == '<ins class="wd">z same w</ins>'


def test_messages_of_different_roles_are_not_diffed():
    rows = render_compare.rows([node("a1", user("one"))], [node("b1", assistant("two"))])
    assert rows[0][0] is not None and rows[0][0].diff is None
