"""core/entryids: an entry id of any shape as one URL path segment and as an element id."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.core.entryids import dom_id, segment_id, url_segment
from tests.idshapes import entry_ids


@given(entry_ids())
def test_a_segment_is_one_segment_and_names_its_id(entry_id):
    segment = url_segment(entry_id)
    assert re.fullmatch(r"[A-Za-z0-9_~%-]+", segment)  # no '/', no '.': never a dot segment
    assert segment_id(segment) == entry_id


def test_plain_ids_name_themselves():
    assert url_segment("a1b2c3d4") == "a1b2c3d4" and segment_id("a1b2c3d4") == "a1b2c3d4"
    assert url_segment("..") == "%2E%2E" and url_segment("a/b") == "a%2Fb"


@given(entry_ids())
def test_an_element_id_needs_no_escaping(entry_id):
    assert re.fullmatch(r"e-[A-Za-z0-9_-]+", dom_id(entry_id, "e"))


@given(st.lists(entry_ids(), min_size=2, max_size=2, unique=True))
def test_distinct_ids_get_distinct_element_ids(pair):
    assert dom_id(pair[0], "e") != dom_id(pair[1], "e")


def test_pis_ids_keep_their_element_ids():
    assert dom_id("a1b2c3d4", "e") == "e-a1b2c3d4"
    assert dom_id("3f0c6a52-9a0e", "t") == "t-3f0c6a52-9a0e"
    # '_' is the escape: a plain id never holds one, an escaped one always does
    assert dom_id("_", "e") == "e-_5f_" and dom_id("5f", "e") == "e-5f"
    assert dom_id("a/b", "e") == "e-a_2f_b" and dom_id("a_2f_b", "e") == "e-a_5f_2f_5f_b"
