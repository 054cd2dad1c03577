"""View tests' fixtures: the branched session and the world of teams and roles of tests.worlds."""

from __future__ import annotations

import pytest

from tests.worlds import Tree, World, branchy_tree, make_world


@pytest.fixture
def tree(alice) -> Tree:
    return branchy_tree(alice)


@pytest.fixture
def world(django_user_model) -> World:
    return make_world(django_user_model)
