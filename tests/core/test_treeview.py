"""The tree explorer's pure model: filters, re-attachment, lanes, segments, windows, siblings."""

from __future__ import annotations

import unittest
from collections.abc import Iterable
from typing import Any

from sessions_app.core import treeview as tv
from sessions_app.core.tree import node_from_entry
from tests.builders import entry, user


def row(
    i: str, parent: str | None, ts: int | None = None, kind: str = "message", role: str | None = "user", **kw: Any
) -> tv.Row:
    return tv.Row(id=i, parent_id=parent, ts_ms=ts if ts is not None else 0, type=kind, role=role, **kw)


def chain(n: int, prefix: str = "n", start_parent: str | None = None, depth0: int = 0) -> list[tv.Row]:
    rows: list[tv.Row] = []
    parent = start_parent
    for k in range(n):
        rid = f"{prefix}{k}"
        rows.append(tv.Row(rid, parent, k, "message", "user" if k % 2 == 0 else "assistant", depth=depth0 + k))
        parent = rid
    return rows


def rows_of(items: Iterable[tv.Item]) -> list[str]:
    return [i.id for i in items if isinstance(i, tv.TreeRow)]


class SkeletonTests(unittest.TestCase):
    def test_it_sorts_children_by_time_then_file_order(self):
        sk = tv.skeleton([row("r", None), row("b", "r", ts=5), row("a", "r", ts=1), row("c", "r", ts=5)])
        self.assertEqual(sk.kids["r"], ["a", "b", "c"])

    def test_it_treats_orphans_and_self_parents_as_roots(self):
        sk = tv.skeleton([row("r", None), row("o", "missing"), row("s", "s")])
        self.assertEqual(sk.kids[None], ["r", "o", "s"])
        self.assertEqual(sk.parent["s"], None)

    def test_it_counts_subtree_sizes(self):
        sk = tv.skeleton([row("r", None), row("a", "r"), row("b", "a"), row("c", "r")])
        self.assertEqual(sk.size, {"r": 4, "a": 2, "b": 1, "c": 1})

    def test_path_to_a_node(self):
        sk = tv.skeleton([row("r", None), row("a", "r", ts=1), row("b", "r", ts=2), row("b1", "b", ts=3)])
        self.assertEqual(tv.path_to(sk, "b1"), ["r", "b", "b1"])


class FilterTests(unittest.TestCase):
    def setUp(self):
        self.rows = [
            row("u", None, role="user"),
            row("m", "u", kind="model_change", role=None),
            row("a", "m", role="assistant", empty_assistant=True),
            row("t", "a", role="toolResult"),
            row("a2", "t", role="assistant"),
            row("l", "a2", kind="label", role=None),
        ]
        self.sk = tv.skeleton(self.rows)

    def visible(self, mode: str, labels: dict[str, str] | None = None, keep: Iterable[str] = ()) -> list[str]:
        v = tv.view(self.sk, mode=mode, labels=labels or {}, keep=keep)
        return sorted(v.vparent)

    def test_default_hides_settings_labels_and_empty_assistants(self):
        self.assertEqual(self.visible("default"), ["a2", "t", "u"])

    def test_hidden_entries_children_reattach_to_the_nearest_visible_ancestor(self):
        v = tv.view(self.sk, mode="default")
        self.assertEqual(v.vparent["t"], "u")
        self.assertEqual(v.vkids["u"], ["t"])

    def test_no_tools_user_only_labelled_and_all(self):
        self.assertEqual(self.visible("no-tools"), ["a2", "u"])
        self.assertEqual(self.visible("user-only"), ["u"])
        self.assertEqual(self.visible("labeled-only", labels={"t": "x"}), ["t"])
        self.assertEqual(self.visible("all"), ["a2", "l", "m", "t", "u"])  # empty assistants never show

    def test_the_current_leaf_is_always_shown(self):
        self.assertIn("l", self.visible("default", keep=["l"]))
        self.assertIn("a", self.visible("user-only", keep=["a"]))

    def test_search_words_must_all_match(self):
        words = tv.search_words("Foo  bar")
        self.assertTrue(tv.matches("bar baz FOO", words))
        self.assertFalse(tv.matches("foo only", words))


class LaneTests(unittest.TestCase):
    def tree(self) -> tv.Skeleton:
        # r - a - b (branch point) - c1 - c2      (older)
        #                           \ d1 - d2     (newer, holds the viewed leaf)
        return tv.skeleton(
            [
                row("r", None, 0), row("a", "r", 1), row("b", "a", 2), row("c1", "b", 3), row("c2", "c1", 4),
                row("d1", "b", 5), row("d2", "d1", 6),
            ]
        )  # fmt: skip

    def test_the_child_towards_the_viewed_leaf_comes_first(self):
        v = tv.view(self.tree(), leaf_id="d2")
        self.assertEqual(v.vkids["b"], ["d1", "c1"])
        self.assertEqual(tv.lane(v, "r"), ["r", "a", "b", "d1", "d2"])
        v = tv.view(self.tree(), leaf_id="c2")
        self.assertEqual(tv.lane(v, "r"), ["r", "a", "b", "c1", "c2"])

    def test_segments_start_after_branch_points(self):
        v = tv.view(self.tree(), leaf_id="d2")
        ids = tv.lane(v, "r")
        self.assertEqual(tv.segment_heads(v, ids), ["r", "r", "r", "d1", "d1"])

    def test_alternatives_are_branches_folded_when_over_budget(self):
        v = tv.view(self.tree(), leaf_id="d2")
        w = tv.window(v, focus="d2", expand_budget=0)
        b_row = next(i for i in w.items if isinstance(i, tv.TreeRow) and i.id == "b")
        self.assertEqual([(x.id, x.size, x.items) for x in b_row.alts], [("c1", 2, None)])
        self.assertEqual(rows_of(w.items), ["r", "a", "b", "d1", "d2"])
        head = next(i for i in w.items if isinstance(i, tv.TreeRow) and i.id == "r")
        self.assertTrue(head.head)
        self.assertEqual(head.seg_len, 3)

    def test_small_trees_draw_alternatives_in_full(self):
        v = tv.view(self.tree(), leaf_id="d2")
        w = tv.window(v, focus="d2")
        b_row = next(i for i in w.items if isinstance(i, tv.TreeRow) and i.id == "b")
        self.assertEqual(rows_of(b_row.alts[0].items or []), ["c1", "c2"])
        self.assertEqual(tv.item_ids(w.items).count("c2"), 1)

    def test_several_roots_show_as_alternatives_at_the_top(self):
        sk = tv.skeleton([row("r1", None, 0), row("x", "r1", 1), row("r2", None, 2)])
        w = tv.window(tv.view(sk, leaf_id="x"), focus="x")
        self.assertEqual(rows_of(w.items), ["r1", "x"])
        self.assertEqual([b.id for b in w.roots], ["r2"])


class WindowTests(unittest.TestCase):
    def test_a_long_linear_session_draws_a_window_and_gaps(self):
        rows = chain(10_000)
        v = tv.view(tv.skeleton(rows), mode="all", leaf_id="n9999")
        w = tv.window(v, focus="n9999", before=100, after=10)
        gaps = [i for i in w.items if isinstance(i, tv.Gap)]
        self.assertEqual(len(rows_of(w.items)), 101)
        self.assertEqual(len(gaps), 1)
        self.assertTrue(gaps[0].up)
        self.assertEqual(gaps[0].count, 9899)  # entries above the first drawn row
        self.assertEqual(gaps[0].node, "n9899")

    def test_a_focus_in_the_middle_has_gaps_both_ways(self):
        v = tv.view(tv.skeleton(chain(1000)), mode="all", leaf_id="n999")
        w = tv.window(v, focus="n500", before=5, after=5)
        self.assertEqual(rows_of(w.items), [f"n{k}" for k in range(495, 506)])
        self.assertEqual([(g.up, g.count) for g in w.items if isinstance(g, tv.Gap)], [(True, 495), (False, 494)])

    def test_a_truncated_region_has_a_gap_above_its_top(self):
        rows = chain(50, depth0=7000)
        v = tv.view(tv.skeleton(rows), mode="all", leaf_id="n49", path=[r.id for r in rows])
        w = tv.window(v, focus="n49", truncated_top=True)
        top = w.items[0]
        assert isinstance(top, tv.Gap)
        self.assertEqual(top.count, 7000)

    def test_chunks_fill_gaps_nearest_rows_first(self):
        v = tv.view(tv.skeleton(chain(1000)), mode="all", leaf_id="n999")
        items = tv.chunk_items(v, "n0", skip_first=False, skip_last=True, depth=0, chunk=100, from_end=True)
        self.assertEqual(rows_of(items)[0], "n899")
        self.assertEqual(rows_of(items)[-1], "n998")
        self.assertIsInstance(items[0], tv.Gap)
        down = tv.chunk_items(v, "n0", skip_first=True, skip_last=False, depth=1, chunk=100)
        self.assertEqual(rows_of(down)[0], "n1")
        self.assertIsInstance(down[-1], tv.Gap)

    def test_unexplored_lane_ends_get_a_gap(self):
        v = tv.view(tv.skeleton(chain(5)), mode="all", leaf_id="n4")
        w = tv.window(v, focus="n4", explored={"n0", "n1", "n2", "n3"})
        last = w.items[-1]
        assert isinstance(last, tv.Gap)
        self.assertIsNone(last.count)


class SiblingTests(unittest.TestCase):
    def test_a_node_sits_among_its_group(self):
        self.assertEqual(tv.siblings(["a", "b", "c"], "b"), tv.Siblings(2, 3, "a", "c"))
        self.assertEqual(tv.siblings(["a", "b"], "b"), tv.Siblings(2, 2, "a", None))
        self.assertIsNone(tv.siblings(["a"], "a"))
        self.assertIsNone(tv.siblings(["a", "b"], "x"))

    def test_siblings_are_ordered_as_pis_tree(self):
        children = [("b", 5, 2), ("a", 9, 1), ("c", 5, 3)]  # (id, time, file position)
        order = sorted(children, key=lambda c: tv.sibling_key(parent_id="p", ts_ms=c[1], seq=c[2]))
        self.assertEqual([c[0] for c in order], ["b", "c", "a"])  # by time, then file order
        roots = sorted(children, key=lambda c: tv.sibling_key(parent_id=None, ts_ms=c[1], seq=c[2]))
        self.assertEqual([c[0] for c in roots], ["a", "b", "c"])  # roots keep file order
        self.assertEqual(tv.BOOKKEEPING, {"label", "session_info"})

    def test_the_group_looks_through_bookkeeping_children(self):
        kids: dict[str | None, list[tv.Kid]] = {
            "p": [((10, 1), "L", "label"), ((20, 4), "b", "message"), ((30, 5), "I", "session_info")],
            "L": [((11, 2), "a", "message"), ((12, 3), "L2", "label")],
            "L2": [((13, 6), "c", "message")],
            # "I" has no children: a bookkeeping leaf is nothing to switch to
        }
        self.assertEqual(tv.sibling_group(kids, "p"), ["a", "c", "b"])
        self.assertEqual(tv.siblings(tv.sibling_group(kids, "p"), "b"), tv.Siblings(3, 3, "c", None))
        self.assertEqual(tv.sibling_group({None: [((0, 1), "r", "message")]}, None), ["r"])

    def test_the_reading_leaf_skips_bookkeeping(self):
        up = [row("l2", "l1", kind="label"), row("l1", "i", kind="session_info"), row("i", "a"), row("a", None)]
        self.assertEqual(tv.reading_leaf(up), up[2])
        only = [row("n", None, kind="session_info")]
        self.assertEqual(tv.reading_leaf(only), only[0])  # nothing real above: the leaf itself
        self.assertIsNone(tv.reading_leaf([]))

    def test_continue_from_a_user_message_goes_to_its_parent(self):
        self.assertEqual(tv.continue_target(row("u", "p", role="user")), ("p", True))
        self.assertEqual(tv.continue_target(row("c", "p", kind="custom_message", role=None)), ("p", True))
        self.assertEqual(tv.continue_target(row("a", "p", role="assistant")), ("a", False))
        self.assertEqual(tv.continue_target(row("u", None, role="user")), (None, True))

    def test_continue_reads_tree_nodes_alike(self):
        node = node_from_entry(entry("u", "p", message=user("hi")["message"]))
        self.assertEqual(tv.continue_target(node), ("p", True))
        node = node_from_entry(entry("s", "p", "session_info", name="x"))
        self.assertEqual(tv.continue_target(node), ("s", False))
