"""Tree acceptance over requests: reduces to the chain model at topk = 1 and to the closed
forms without spread; quadrature against Monte Carlo over requests with a Beta spread."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.acceptance import AcceptanceModel, RateClass, Spread
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeAcceptance, TreeDraft
from sim.model.tree.build import sglang_tree
from sim.model.tree.rates import residual_rank_rates
from sim.model.tree.samplers import tree_lengths_from_uniforms
from sim.model.tree.theory import tree_accept_length, tree_accept_pmf

SHARES = np.array([0.45, 0.2])
MIX = AcceptanceModel(
    4,
    (
        RateClass("chat", 0.6, np.array([0.7, 0.65, 0.6, 0.55]), Spread(concentration=6.0)),
        RateClass("code", 0.4, np.full(4, 0.85), Spread(concentration=20.0)),
    ),
)
TREE = sglang_tree(4, 3, 10, residual_rank_rates(np.full(4, 0.72), SHARES))


def test_chain_with_spread_is_the_chain_model():
    model = TreeAcceptance(MIX, (), Tree.chain(4))
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
    model = TreeAcceptance(MIX, tuple(SHARES), TREE)
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
    model = TreeAcceptance(MIX, tuple(SHARES), TREE)
    _, top1 = model.sample_requests(np.random.default_rng(1), 8)
    a = model.chain_rates(top1)
    s = np.concatenate([np.ones((8, 1)), np.cumprod(a, axis=1)], axis=1)
    assert s.sum(axis=1) == pytest.approx(tree_accept_length(TREE, model.rank_rates(top1)))


def test_too_few_depths_or_ranks():
    with pytest.raises(ValueError, match="depths"):
        TreeAcceptance(MIX, (), Tree.chain(5))
    wide = Tree.from_rank_paths([(0,), (1,), (2,)])
    with pytest.raises(ValueError, match="ranks"):
        TreeAcceptance(MIX, (0.3,), wide)


def test_sglang_draft_builds_its_tree_from_the_mean_rates_and_follows_levers():
    draft = TreeDraft(4, 3, 10)
    model = TreeAcceptance(MIX, tuple(SHARES), draft)
    q = residual_rank_rates(MIX.mean_rates()[None, :], SHARES)[0]
    assert model.tree == sglang_tree(4, 3, 10, q)
    lower = model.scaled(0.8)
    assert lower.mean_accept_length() < model.mean_accept_length()
    assert lower.tree == sglang_tree(4, 3, 10, residual_rank_rates(0.8 * MIX.mean_rates(), SHARES))


def test_engine_interface_matches_the_closed_form():
    model = TreeAcceptance(MIX, tuple(SHARES), TREE)
    _, top1 = model.sample_requests(np.random.default_rng(2), 3)
    u = np.random.default_rng(3).random((2000, model.num_steps))
    for row, rates in zip(top1, model.chain_rates(top1), strict=True):
        walk = model.sequential_length(row.tolist())
        q = model.rank_rates(row[None, : model.depth])[0]
        expected = tree_lengths_from_uniforms(u, TREE, q)
        assert [walk(x) for x in u.tolist()] == expected.tolist()
        assert 1 + np.cumprod(rates).sum() == pytest.approx(tree_accept_length(TREE, q))
