"""Tree acceptance over requests: reduces to the chain model at topk = 1 and to the closed
forms without spread; quadrature against Monte Carlo over requests with a Beta spread."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.acceptance import AcceptanceModel, RateClass
from sim.model.tree import Tree
from sim.model.tree_acceptance import TreeAcceptance
from sim.model.tree_build import sglang_tree
from sim.model.tree_rates import residual_rank_rates
from sim.model.tree_samplers import tree_lengths_from_uniforms
from sim.model.tree_theory import tree_accept_length, tree_accept_pmf

SHARES = np.array([0.45, 0.2])
MIX = AcceptanceModel(
    4,
    (
        RateClass("chat", 0.6, np.array([0.7, 0.65, 0.6, 0.55]), np.full(4, 6.0)),
        RateClass("code", 0.4, np.full(4, 0.85), np.full(4, 20.0)),
    ),
)
TREE = sglang_tree(4, 3, 10, residual_rank_rates(np.full(4, 0.72), SHARES))


def test_chain_with_spread_is_the_chain_model():
    model = TreeAcceptance(Tree.chain(4), MIX, ())
    assert model.mean_accept_length() == pytest.approx(MIX.mean_accept_length(), rel=1e-12)
    np.testing.assert_allclose(model.cycle_pmf(), MIX.cycle_pmf(), atol=1e-12)
    np.testing.assert_allclose(model.effective_rates(), MIX.effective_rates(), atol=1e-12)


def test_without_spread_it_is_the_closed_form():
    top1 = np.array([0.8, 0.7, 0.6, 0.5])
    model = TreeAcceptance.single(TREE, top1, SHARES)
    q = residual_rank_rates(top1, SHARES)
    assert model.mean_accept_length() == pytest.approx(tree_accept_length(TREE, q))
    np.testing.assert_allclose(model.request_pmf(), tree_accept_pmf(TREE, q))
    np.testing.assert_allclose(model.cycle_pmf(), tree_accept_pmf(TREE, q))


def test_quadrature_against_monte_carlo_over_requests():
    model = TreeAcceptance(TREE, MIX, tuple(SHARES))
    rng = np.random.default_rng(5)
    n = 100_000
    _, top1 = model.sample_requests(rng, n)
    q = model.rank_rates(top1)  # (n, depth, W)
    lengths = tree_lengths_from_uniforms(rng.random((n, model.depth)), TREE, q)
    pmf = model.request_pmf()  # one cycle of a random request
    freq = np.bincount(lengths - 1, minlength=pmf.size) / n
    assert np.all(np.abs(freq - pmf) <= 4 * np.sqrt(pmf * (1 - pmf) / n) + 1e-12)
    # pooled cycles: E[pmf / AL] / E[1 / AL] from the per-request closed forms
    per = tree_accept_pmf(TREE, q)
    al = tree_accept_length(TREE, q)
    w = 1.0 / al
    pooled = (per * w[:, None]).mean(axis=0) / w.mean()
    se = (per * w[:, None]).std(axis=0) / np.sqrt(n) / w.mean()
    assert np.all(np.abs(pooled - model.cycle_pmf()) <= 4 * se + 1e-9)
    assert model.cycle_mean_accept_length() < model.mean_accept_length()


def test_chain_rates_give_the_tree_law():
    model = TreeAcceptance(TREE, MIX, tuple(SHARES))
    _, top1 = model.sample_requests(np.random.default_rng(1), 8)
    a = model.chain_rates(top1)
    s = np.concatenate([np.ones((8, 1)), np.cumprod(a, axis=1)], axis=1)
    assert s.sum(axis=1) == pytest.approx(tree_accept_length(TREE, model.rank_rates(top1)))


def test_too_few_depths_or_ranks():
    with pytest.raises(ValueError, match="depths"):
        TreeAcceptance(Tree.chain(5), MIX, ())
    wide = Tree.from_rank_paths([(0,), (1,), (2,)])
    with pytest.raises(ValueError, match="ranks"):
        TreeAcceptance(wide, MIX, (0.3,))
