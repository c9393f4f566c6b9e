"""Tree closed forms against brute-force enumeration, the chain formulas and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.rates import accept_length_pmf, mean_accept_length
from sim.model.tree import Tree
from sim.model.tree.rates import residual_rank_rates, residual_shares
from sim.model.tree.theory import (
    chain_equivalent_rates,
    check_rank_rates,
    depth_survival,
    node_probabilities,
    tree_accept_length,
    tree_accept_pmf,
)
from tests.model.tree.cases import brute_force_pmf, rank_rates, rising, tree_with_rates, trees


def test_small_tree_by_hand():
    # root -> a (rank 0), b (rank 1); a -> c (rank 0). q = [[0.6, 0.3], [0.5, 0.2]]
    t = Tree.from_rank_paths([(0,), (1,), (0, 0)])
    q = np.array([[0.6, 0.3], [0.5, 0.2]])
    np.testing.assert_allclose(node_probabilities(t, q), [1.0, 0.6, 0.3, 0.3])
    # P(L=1) = 0.1, P(L=2) = 0.6 * 0.5 + 0.3 = 0.6, P(L=3) = 0.3
    np.testing.assert_allclose(tree_accept_pmf(t, q), [0.1, 0.6, 0.3])
    assert tree_accept_length(t, q) == pytest.approx(1 + 0.6 + 0.3 + 0.3)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_closed_form_matches_brute_force(data):
    t = data.draw(trees(max_nodes=6, max_width=3))
    depth, width = max(t.max_depth, 1), max(t.width, 1)
    q = data.draw(rank_rates(depth, width))
    np.testing.assert_allclose(tree_accept_pmf(t, q), brute_force_pmf(t, q), atol=1e-12)
    pmf = brute_force_pmf(t, q)
    assert tree_accept_length(t, q) == pytest.approx(pmf @ np.arange(1, pmf.size + 1))


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=10))
def test_chain_equals_chain_formulas_exactly(rates):
    t = Tree.chain(len(rates))
    q = np.array(rates)[:, None]
    np.testing.assert_array_equal(depth_survival(t, q)[1:], np.cumprod(rates))
    assert tree_accept_length(t, q) == mean_accept_length(rates)
    np.testing.assert_allclose(tree_accept_pmf(t, q), accept_length_pmf(rates), atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_chain_equivalent_rates_reproduce_the_pmf(data):
    t, q = data.draw(tree_with_rates())
    a = chain_equivalent_rates(t, q)
    np.testing.assert_allclose(accept_length_pmf(a), tree_accept_pmf(t, q), atol=1e-12)


def test_vectorized_over_requests():
    t = Tree.from_rank_paths([(0,), (1,), (0, 0), (0, 1)])
    q = np.array([[[0.6, 0.3], [0.5, 0.2]], [[0.9, 0.05], [0.8, 0.1]]])
    both = tree_accept_length(t, q)
    assert both.shape == (2,)
    assert both[1] == pytest.approx(tree_accept_length(t, q[1]))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_accept_length_monotone_in_rates(data):
    t, q = data.draw(tree_with_rates())
    q2 = data.draw(rising(q))
    assert tree_accept_length(t, q2) >= tree_accept_length(t, q) - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.data(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_rank_dominant_trees_rise_with_top1_under_residual_shares(data, lo, hi):
    t = data.draw(trees(max_width=3).filter(lambda x: x.rank_dominant()))
    h = data.draw(rank_rates(1, 2))[0]
    lo, hi = sorted((lo, hi))
    depth = max(t.max_depth, 1)
    q_lo = residual_rank_rates(np.full(depth, lo), h)
    q_hi = residual_rank_rates(np.full(depth, hi), h)
    assert tree_accept_length(t, q_hi) >= tree_accept_length(t, q_lo) - 1e-12


def test_residual_shares_round_trip():
    p = np.array([0.7, 0.15, 0.06])
    h = residual_shares(p)
    np.testing.assert_allclose(h, [0.5, 0.2])
    np.testing.assert_allclose(residual_rank_rates(np.array([0.7]), h)[0], p)


@pytest.mark.parametrize(
    ("q", "match"),
    [
        ([0.5], "shape"),
        ([[0.7, 0.4]], "sum above 1"),
        ([[1.2, 0.0]], r"\[0, 1\]"),
        ([[0.5, 0.1]], "the tree has 3"),
    ],
)
def test_bad_rank_rates(q, match):
    with pytest.raises(ValueError, match=match):
        check_rank_rates(q, Tree.chain(3))
