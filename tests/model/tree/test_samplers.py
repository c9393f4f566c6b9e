"""Tree samplers: Monte Carlo against the closed forms (4 SE), the sequential and
vectorized forms draw for draw, the chain sampler for topk = 1, common random numbers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.samplers import accept_length_sequential
from sim.model.tree import Tree
from sim.model.tree.build import optimal_tree, sglang_tree
from sim.model.tree.samplers import (
    sample_tree_lengths,
    tree_length_sequential,
    tree_lengths_from_uniforms,
)
from sim.model.tree.theory import tree_accept_length, tree_accept_pmf
from tests.model.tree.cases import rising, tree_with_rates

Q = np.array([[0.62, 0.18, 0.07], [0.55, 0.2, 0.08], [0.5, 0.2, 0.1], [0.45, 0.2, 0.1]])
CASES = {
    "sglang": sglang_tree(4, 3, 12, Q),
    "optimal": optimal_tree(11, 4, Q),
    "chain": Tree.chain(4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_monte_carlo_pmf_and_mean_within_4_se(name):
    tree = CASES[name]
    n = 200_000
    lengths = sample_tree_lengths(np.random.default_rng(11), tree, Q, n)
    pmf = tree_accept_pmf(tree, Q)
    freq = np.bincount(lengths - 1, minlength=pmf.size) / n
    se = np.sqrt(pmf * (1 - pmf) / n)
    assert np.all(np.abs(freq - pmf) <= 4 * se + 1e-12)
    mean = tree_accept_length(tree, Q)
    var = pmf @ np.arange(1, pmf.size + 1) ** 2 - mean**2
    assert abs(lengths.mean() - mean) <= 4 * np.sqrt(var / n)


def test_per_cycle_rates_vectorize():
    tree = CASES["sglang"]
    u = np.random.default_rng(3).random((500, 4))
    rates = np.broadcast_to(Q, (500, *Q.shape))
    np.testing.assert_array_equal(
        tree_lengths_from_uniforms(u, tree, rates), tree_lengths_from_uniforms(u, tree, Q)
    )


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_sequential_equals_vectorized_draw_for_draw(data):
    tree, q = data.draw(tree_with_rates())
    u = np.random.default_rng(data.draw(st.integers(0, 2**16))).random((50, q.shape[0]))
    vec = tree_lengths_from_uniforms(u, tree, q)
    seq = [tree_length_sequential(row, tree.child_lists, q.tolist()) for row in u.tolist()]
    np.testing.assert_array_equal(vec, seq)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), st.integers(0, 2**16))
def test_topk_one_draws_like_the_chain_sampler(rates, seed):
    u = np.random.default_rng(seed).random((40, len(rates)))
    tree = Tree.chain(len(rates))
    vec = tree_lengths_from_uniforms(u, tree, np.array(rates)[:, None])
    chain = [accept_length_sequential(row, rates) for row in u.tolist()]
    np.testing.assert_array_equal(vec, chain)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_monotone_under_common_random_numbers_for_rank_dominant_trees(data):
    tree, q = data.draw(tree_with_rates(dominant=True))
    q2 = data.draw(rising(q))
    u = np.random.default_rng(data.draw(st.integers(0, 2**16))).random((200, q.shape[0]))
    low = tree_lengths_from_uniforms(u, tree, q)
    high = tree_lengths_from_uniforms(u, tree, q2)
    assert np.all(high >= low)


def test_without_rank_dominance_monotonicity_can_fail():
    # root's rank-1 child is a leaf, its rank-2 child has a child: raising q_1 moves the
    # draw u = 0.55 from the rank-2 child (L = 3) to the rank-1 leaf (L = 2)
    tree = Tree.from_rank_paths([(0,), (1,), (1, 0)])
    u = np.array([[0.55, 0.1]])
    q = np.array([[0.5, 0.4], [0.9, 0.0]])
    q2 = np.array([[0.6, 0.3], [0.9, 0.0]])
    assert tree_lengths_from_uniforms(u, tree, q)[0] == 3
    assert tree_lengths_from_uniforms(u, tree, q2)[0] == 2
