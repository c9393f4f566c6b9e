"""The array form of SGLang's beam run against the reference implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.tree.build import beam_tree, candidate_count
from sim.model.tree.pool import beam_pool
from sim.model.tree.theory import tree_accept_length
from tests.model.tree.cases import rank_rates


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 5), st.integers(1, 3))
def test_pool_trees_equal_the_reference_beam_run(data, steps, topk):
    scores = data.draw(rank_rates(steps, topk))
    rates = data.draw(rank_rates(steps, topk))
    pool = beam_pool(steps, topk, scores, rates)
    for s in range(1, steps + 1):
        lengths = pool.accept_lengths(s)
        assert lengths.size == candidate_count(s, topk) + 1
        for n in {2, candidate_count(s, topk) + 1, data.draw(st.integers(2, lengths.size))}:
            ref = beam_tree(s, topk, n, lambda path: scores[len(path)])
            assert pool.tree(s, n) == ref
            assert lengths[n - 1] == pytest.approx(tree_accept_length(ref, rates), abs=1e-12)


def test_ties_break_towards_lower_rank_paths():
    # equal rates at every rank and depth: every candidate of a depth ties
    q = np.full((3, 2), 0.4)
    pool = beam_pool(3, 2, q, q)
    assert pool.tree(3, 4).rank_paths() == ((), (0,), (1,), (0, 0))
    assert pool.tree(3, 4) == beam_tree(3, 2, 4, lambda p: q[len(p)])


def test_bad_pool_arguments():
    with pytest.raises(ValueError, match="need shape"):
        beam_pool(3, 2, np.full((2, 2), 0.3), np.full((3, 2), 0.3))
    with pytest.raises(ValueError, match=r"1\.\.3"):
        beam_pool(3, 2, np.full((3, 2), 0.3), np.full((3, 2), 0.3)).selection(4)
