"""View tests' fixtures: the branched session of tests.worlds."""

from __future__ import annotations

import pytest

from tests.worlds import Tree, branchy_tree


@pytest.fixture
def tree(alice) -> Tree:
    return branchy_tree(alice)
