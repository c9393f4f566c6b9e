"""The tree as data: construction, validation, derived arrays, rank dominance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from sim.model.tree import Tree
from tests.model.tree.cases import trees


def test_chain_shape():
    t = Tree.chain(3)
    assert t.size == 4 and t.drafts == 3 and t.max_depth == 3 and t.width == 1
    np.testing.assert_array_equal(t.depth, [0, 1, 2, 3])
    np.testing.assert_array_equal(t.children, [[1, -1], [2, -1], [3, -1], [-1, -1]])
    assert t.is_chain() and t.rank_dominant()


def test_bare_root():
    t = Tree.chain(0)
    assert t.size == 1 and t.max_depth == 0 and t.width == 0 and t.levels == ()


def test_rank_paths_round_trip_and_canonical_order():
    t = Tree.from_rank_paths([(1,), (0,), (0, 0), (0, 1), (1, 0)])
    assert t.rank_paths() == ((), (0,), (1,), (0, 0), (0, 1), (1, 0))
    assert Tree.from_rank_paths(t.rank_paths()[1:]) == t
    assert t.parent == (-1, 0, 0, 1, 1, 2)
    np.testing.assert_array_equal(t.nodes_per_depth(), [1, 2, 3])
    assert not t.is_chain()


@pytest.mark.parametrize(
    ("parent", "rank", "match"),
    [
        ((0,), (-1,), "root"),
        ((-1, 1), (-1, 0), "earlier node"),
        ((-1, 0), (-1, -2), ">= 0"),
        ((-1, 0, 0), (-1, 0, 0), "already has a child"),
        ((-1, 0), (-1,), "one rank per node"),
    ],
)
def test_invalid_trees(parent, rank, match):
    with pytest.raises(ValueError, match=match):
        Tree(parent, rank)


def test_missing_parent_path():
    with pytest.raises(ValueError, match="without its parent"):
        Tree.from_rank_paths([(0, 0)])


def test_rank_dominance():
    assert Tree.from_rank_paths([(0,), (1,), (0, 0), (0, 1), (1, 0)]).rank_dominant()
    # the rank-2 child has a child, the rank-1 child has none
    assert not Tree.from_rank_paths([(0,), (1,), (1, 0)]).rank_dominant()
    # rank 1 present without rank 0
    assert not Tree.from_rank_paths([(1,)]).rank_dominant()


@given(trees())
def test_derived_arrays_agree(t: Tree):
    kids = t.children
    for i in range(1, t.size):
        assert kids[t.parent[i], t.rank[i]] == i
        assert t.depth[i] == t.depth[t.parent[i]] + 1
    assert (kids >= 0).sum() == t.drafts
    assert sum(len(level) for level in t.levels) == t.drafts
    assert hash(Tree.from_rank_paths(t.rank_paths()[1:])) == hash(t)
