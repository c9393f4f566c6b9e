"""Both engines on trees: pooled pmf and mean within 4 SE of the closed forms, the exact
finite-request law, agreement with each other, and topk = 1 unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost
from sim.model.renewal import request_tok_s_distribution
from sim.model.tree.acceptance import TreeAcceptance
from sim.model.tree.theory import tree_accept_pmf
from sim.simulation.simulate import simulate
from tests.helpers import MIXED, make

RANKS = {"rank_rates": [0.62, 0.18, 0.08]}


def _tree(acceptance, **kw):
    return make(acceptance, k=4, topk=3, num_draft_tokens=10, **kw)


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_tree_pmf_and_finite_request_mean_match_the_closed_forms(engine):
    sc = _tree(RANKS, tokens=200, requests=40, replications=8)
    model = bind(sc).acceptance
    assert isinstance(model, TreeAcceptance) and model.tree.width == 3
    res = simulate(sc, engine=engine)
    counts = res.accept_counts.sum(axis=0)
    n = counts.sum()
    pmf = tree_accept_pmf(model.tree, model.mean_rank_rates())
    assert counts.size == pmf.size
    # cycles within a request are i.i.d.; the per-replication spread carries the SE
    per_rep = res.accept_counts / res.accept_counts.sum(axis=1, keepdims=True)
    se = per_rep.std(axis=0, ddof=1) / math.sqrt(res.replications) + 1e-12
    assert np.all(np.abs(counts / n - pmf) <= 4 * se + 1e-9)
    values, probs = request_tok_s_distribution(pmf, 200, cycle_cost(sc).total_ms)
    se_tok = res.tok_s.std(ddof=1) / math.sqrt(res.tok_s.size)
    assert abs(res.tok_s.mean() - float(values @ probs)) < 4 * se_tok


def test_engines_agree_on_a_heterogeneous_tree():
    sc = _tree(
        {**MIXED, "rank_profile": "medusa-vicuna-7b-head0"}, tokens=400, requests=60, replications=6
    )
    fast = simulate(sc, engine="fast")
    des = simulate(sc, engine="des")
    a, b = fast.tok_s.mean(axis=1), des.tok_s.mean(axis=1)
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    model = bind(sc).acceptance
    for res in (fast, des):
        al = (res.accept_counts @ np.arange(1, model.num_steps + 2)) / res.accept_counts.sum(1)
        se_al = al.std(ddof=1) / math.sqrt(al.size)
        assert abs(al.mean() - model.cycle_mean_accept_length()) < 4 * se_al


def test_topk_one_runs_exactly_as_before():
    chain = make({"alpha": 0.7, "shape": "flat"}, k=3, tokens=100, requests=10)
    same = make({"rank_rates": [0.7]}, k=3, tokens=100, requests=10, num_draft_tokens=4)
    for engine in ("fast", "des"):
        a, b = simulate(chain, engine=engine), simulate(same, engine=engine)
        np.testing.assert_array_equal(a.tok_s, b.tok_s)
        np.testing.assert_array_equal(a.accept_counts, b.accept_counts)


def test_same_seed_same_tree_output_for_any_worker_count():
    sc = _tree(RANKS, tokens=100, requests=10, replications=4)
    one = simulate(sc, workers=1)
    two = simulate(sc, workers=2)
    np.testing.assert_array_equal(one.tok_s, two.tok_s)
