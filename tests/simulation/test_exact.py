"""The exact per-request law against the Monte Carlo, which stays the general path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.binding.acceptance_model import acceptance_model
from sim.binding.bound import bind
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.exact import exact_obstacle, exact_summary, scenario_exact
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
from tests.helpers import MIXED, make


def _exact(sc, targets):
    model = acceptance_model(sc.acceptance, sc.num_steps)
    return exact_summary(model, bind(sc).cycle_time_model(), sc.workload.output_tokens, targets)


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_monte_carlo_estimates_the_exact_law(seed_path, engine):
    """Mean, percentiles, P(tok/s >= t), pooled accept length: within 4 standard errors."""
    sc = load_scenario(seed_path)
    if engine == "des":
        sc = with_overrides(sc, {"simulation.replications": 4, "workload.requests": 50})
    targets = [58.0, 60.0, 62.0]  # probabilities well inside (0, 1): normal SEs hold
    ex = _exact(sc, targets)
    mc = summarize(simulate(sc, engine=engine), targets)
    n = mc.replications * mc.requests
    assert ex.method == "exact" and mc.method == "monte_carlo"
    assert abs(mc.tok_s_mean - ex.tok_s_mean) < 4 * ex.tok_s_std / math.sqrt(n)
    assert mc.tok_s_std == pytest.approx(ex.tok_s_std, rel=0.1)
    for t_mc, t_ex in zip(mc.targets, ex.targets, strict=True):
        p = t_ex.p_at_least
        assert abs(t_mc.p_at_least - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-12
        assert t_ex.ci95 == (p, p)
    # pooled accept length: Wald's identity makes it E[L] (cycles are correlated within a
    # request only through n; 4 SE of the per-cycle mean over all cycles, conservatively x2)
    var_l = (
        float(ex.accept_pmf @ np.arange(1, ex.accept_pmf.size + 1) ** 2) - ex.accept_length_mean**2
    )
    cycles = n * 512 / ex.accept_length_mean
    assert abs(mc.accept_length_mean - ex.accept_length_mean) < 8 * math.sqrt(var_l / cycles)
    assert mc.cycle_ms["mean"] == pytest.approx(ex.cycle_ms["mean"], rel=1e-9)
    assert ex.tok_s_p5 <= ex.tok_s_p50 <= ex.tok_s_p95
    assert abs(mc.tok_s_p50 - ex.tok_s_p50) <= 0.02 * ex.tok_s_p50


def test_exact_summary_has_the_monte_carlo_keys(seed_path):
    sc = load_scenario(seed_path)
    d_ex = _exact(sc, [150.0]).to_dict()
    d_mc = summarize(simulate(sc, replications=2, requests=5), [150.0]).to_dict()
    assert set(d_ex) == set(d_mc)
    assert d_ex["method"] == "exact" and d_ex["replications"] is None


@pytest.mark.parametrize(
    ("acceptance", "jitter", "words"),
    [
        ({"alpha": 0.7, "concentration": 5.0}, 0.0, "spreads"),
        (MIXED, 0.0, "mix"),
        ({"alpha": 0.7}, 0.2, "cycle times vary"),
    ],
)
def test_no_exact_law_says_why(acceptance, jitter, words):
    sc = make(acceptance, jitter=jitter)
    reason = exact_obstacle(acceptance_model(sc.acceptance, 3), bind(sc).cycle_time_model())
    assert reason is not None and words in reason


def test_plain_scenario_has_an_exact_law():
    sc = make({"alpha": 0.7})
    assert exact_obstacle(acceptance_model(sc.acceptance, 3), bind(sc).cycle_time_model()) is None


def test_an_extend_growing_with_l_keeps_the_law_exact(seed_path):
    """timing.draft_extend_ms_per_token: the joint law of (n, E) against the Monte Carlo."""
    sc = with_overrides(load_scenario(seed_path), {"timing.draft_extend_ms_per_token": 0.5})
    ex, _ = scenario_exact(bind(sc), targets=[59.0])
    mc = summarize(simulate(sc), [59.0])
    n = mc.replications * mc.requests
    assert abs(mc.tok_s_mean - ex.tok_s_mean) < 4 * ex.tok_s_std / math.sqrt(n)
    p = ex.targets[0].p_at_least
    assert abs(mc.targets[0].p_at_least - p) <= 4 * math.sqrt(p * (1 - p) / n)
    assert mc.cycle_ms["extend"] == pytest.approx(ex.cycle_ms["extend"], rel=0.01)
    fixed, _ = scenario_exact(bind(load_scenario(seed_path)), targets=[59.0])
    # draft_extend_ms is quoted at L = k + 1: cycles that accept less extend for less time
    assert ex.tok_s_mean > fixed.tok_s_mean


def test_exact_percentiles_are_the_laws_quantiles_by_their_definition():
    """Each reported percentile q of the exact summary is the least tok/s v with P(tok/s
    <= v) >= q: P(<= v) >= q > P(< v) on the law's own support."""
    summary, law = scenario_exact(bind(make({"alpha": 0.7}, k=3, tokens=60)))
    values, probs = law.tok_s_values(), law.probs
    for q, v in ((0.05, summary.tok_s_p5), (0.5, summary.tok_s_p50), (0.95, summary.tok_s_p95)):
        assert probs[values <= v].sum() >= q - 1e-12
        assert probs[values < v].sum() < q
