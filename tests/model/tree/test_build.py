"""SGLang's beam tree and the optimal tree: hand-worked cases, exhaustive search, invariants."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.tree import Tree
from sim.model.tree.build import beam_tree, candidate_count, optimal_tree, sglang_tree
from sim.model.tree.theory import tree_accept_length
from tests.model.tree.cases import rank_rates


def test_topk_one_is_the_chain():
    q = np.array([[0.9], [0.2], [0.7], [0.05]])
    assert sglang_tree(4, 1, 5, q) == Tree.chain(4)
    assert candidate_count(4, 1) == 4


def test_beam_limit_by_hand():
    # topk 2, 3 steps, 6 drafts, per-beam drafter probabilities (not one profile):
    # root: (0) 0.6, (1) 0.4. Step 1 expands both: (0,0) .6*.5=.30, (0,1) .6*.5=.30,
    # (1,0) .4*.9=.36, (1,1) .4*.1=.04 -> beams (1,0) .36, (0,0) .30 (tie with (0,1): lower
    # rank path first). Step 2 expands them: (1,0,0) .36*.8=.288, (1,0,1) .36*.2=.072,
    # (0,0,0) .30*.5=.15, (0,0,1) .15. The 6 best of all 12 candidates:
    # .6 (0), .4 (1), .36 (1,0), .30 (0,0), .30 (0,1), .288 (1,0,0).
    probs = {
        (): [0.6, 0.4],
        (0,): [0.5, 0.5],
        (1,): [0.9, 0.1],
        (1, 0): [0.8, 0.2],
        (0, 0): [0.5, 0.5],
    }
    t = beam_tree(3, 2, 7, lambda p: probs[p])
    assert t == Tree.from_rank_paths([(0,), (1,), (1, 0), (0, 0), (0, 1), (1, 0, 0)])


def test_sglang_differs_from_optimal_when_beams_bind():
    # two strong ranks: the best tree expands more than topk nodes at depth 2
    q = np.array([[0.5, 0.45]] * 3)
    s = sglang_tree(3, 2, 11, q)
    best = optimal_tree(10, 3, q)
    assert s.drafts == best.drafts == 10
    assert s != best
    assert tree_accept_length(s, q) < tree_accept_length(best, q)
    assert max(np.bincount(s.parents[1:][s.depth[1:] == 3], minlength=1)) <= 2


def test_pool_too_small_is_refused():
    with pytest.raises(ValueError, match=r"must be in 1\.\.6"):
        sglang_tree(2, 2, 8, np.full((2, 2), 0.3))


def _all_trees(depth: int, width: int, budget: int):
    """Every parent-closed set of at most ``budget`` nodes of the full tree."""
    nodes = [p for d in range(1, depth + 1) for p in itertools.product(range(width), repeat=d)]
    for n in range(budget + 1):
        for subset in itertools.combinations(nodes, n):
            chosen = set(subset)
            if all(len(p) == 1 or p[:-1] in chosen for p in chosen):
                yield Tree.from_rank_paths(chosen)


@settings(max_examples=25, deadline=None)
@given(st.data(), st.integers(0, 5))
def test_greedy_is_optimal_by_exhaustive_search(data, budget):
    q = data.draw(rank_rates(3, 2))
    best = max(tree_accept_length(t, q) for t in _all_trees(3, 2, budget))
    assert tree_accept_length(optimal_tree(budget, 3, q), q) == pytest.approx(best, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(1, 3))
def test_sglang_never_beats_optimal(data, steps, topk):
    q = data.draw(rank_rates(steps, topk))
    scores = data.draw(rank_rates(steps, topk))
    n = data.draw(st.integers(2, candidate_count(steps, topk) + 1))
    best = tree_accept_length(optimal_tree(n - 1, steps, q), q)
    for s in (sglang_tree(steps, topk, n, q), sglang_tree(steps, topk, n, scores)):
        assert s.drafts == n - 1 and s.max_depth <= steps and s.width <= topk
        assert tree_accept_length(s, q) <= best + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(0, 12), st.integers(1, 5))
def test_optimal_monotone_in_budget(data, budget, depth):
    q = data.draw(rank_rates(depth, 3))
    smaller = tree_accept_length(optimal_tree(budget, depth, q), q)
    assert tree_accept_length(optimal_tree(budget + 1, depth, q), q) >= smaller - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(1, 3))
def test_trees_from_rank_ordered_rates_are_rank_dominant(data, steps, topk):
    q = data.draw(rank_rates(steps, topk, decreasing=True))
    n = data.draw(st.integers(2, candidate_count(steps, topk) + 1))
    assert sglang_tree(steps, topk, n, q).rank_dominant()
    assert optimal_tree(n - 1, steps, q).rank_dominant()


def test_optimal_width_one_is_a_chain():
    q = np.array([[0.8, 0.1]] * 6)
    assert optimal_tree(4, 6, q, width=1) == Tree.chain(4)
    assert optimal_tree(9, 3, q, width=1) == Tree.chain(3)
