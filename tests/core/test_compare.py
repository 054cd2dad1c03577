"""core/compare.py: paths cut below their common ancestor, and the bounded word diff."""

from __future__ import annotations

import time

from sessions_app.core import compare
from sessions_app.core.tree import Node


def path(*ids: str, parent: str | None = None) -> list[Node]:
    out: list[Node] = []
    for i in ids:
        out.append(Node(id=i, parent_id=parent, type="message", data={"id": i, "parentId": parent}))
        parent = i
    return out


def ids(nodes: list[Node]) -> list[str]:
    return [n.id for n in nodes]


def test_split_below_the_fork():
    split = compare.split_paths(path("r", "a", "b", "c"), path("r", "a", "d"))
    assert (split.ancestor_id, ids(split.a), ids(split.b)) == ("a", ["b", "c"], ["d"])


def test_split_when_one_is_on_the_others_path():
    split = compare.split_paths(path("r", "a"), path("r", "a", "d"))
    assert (split.ancestor_id, ids(split.a), ids(split.b)) == ("a", [], ["d"])


def test_split_of_two_roots_keeps_both_whole_paths():
    split = compare.split_paths(path("r", "a"), path("s", "t"))
    assert (split.ancestor_id, ids(split.a), ids(split.b)) == (None, ["r", "a"], ["s", "t"])


def test_word_diff_marks_the_changed_words_on_each_side():
    d = compare.word_diff("the quick brown fox", "the slow brown fox jumps")
    assert d.a == [("=", "the "), ("-", "quick"), ("=", " brown fox")]
    assert d.b == [("=", "the "), ("+", "slow"), ("=", " brown fox"), ("+", " jumps")]
    assert "".join(t for _, t in d.a) == "the quick brown fox"
    assert "".join(t for _, t in d.b) == "the slow brown fox jumps"


def test_word_diff_of_equal_texts_is_all_shared():
    d = compare.word_diff("same words", "same words")
    assert d.a == d.b == [("=", "same words")]


def test_hostile_text_is_trimmed_not_compared_pair_by_pair():
    old = "a " * 20_000 + "x"
    new = "a " * 20_000 + "y"
    started = time.perf_counter()
    d = compare.word_diff("start " + old, "begin " + new)
    assert time.perf_counter() - started < 2  # difflib on 40k x 40k words would take minutes
    assert d.work == 0  # over WORD_WORK: the trimmed replacement
    assert "".join(t for _, t in d.a) == "start " + old
    assert "".join(t for _, t in d.b) == "begin " + new
    assert d.a == [("-", "start " + old)]  # no common head or tail: one replacement


def test_a_trimmed_diff_keeps_the_common_head_and_tail():
    middle_a, middle_b = "b " * 600, "c " * 600
    d = compare.word_diff("head " + middle_a + "tail", "head " + middle_b + "tail")
    assert d.work == 0
    assert d.a == [("=", "head "), ("-", middle_a.rstrip()), ("=", " tail")]
    assert d.b == [("=", "head "), ("+", middle_b.rstrip()), ("=", " tail")]


def test_a_spent_budget_trims_even_small_texts():
    assert compare.word_diff("one two", "one three").work > 0
    assert compare.word_diff("one two", "one three", budget=0).work == 0
