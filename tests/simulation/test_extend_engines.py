"""Both Monte Carlo engines honour a draft extend that grows with the accepted tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.binding.closed_form import cycle_cost
from sim.model.rates import accept_length_pmf
from sim.model.renewal import request_tok_s_distribution
from sim.scenario.overrides import with_overrides
from sim.simulation.simulate import simulate
from tests.helpers import make

SLOPE = {"timing.draft_extend_ms_per_token": 0.6, "timing.draft_extend_tokens": 1.0}


def scenario(jitter=0.0, tokens=200, requests=40, replications=10):
    base = make({"alpha": 0.75}, k=3, tokens=tokens, jitter=jitter, requests=requests)
    return with_overrides(base, {**SLOPE, "simulation.replications": replications})


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_deterministic_request_tok_s_matches_the_exact_finite_n_law(engine):
    sc = scenario(replications=4 if engine == "des" else 10)
    res = simulate(sc, engine=engine)
    cost = cycle_cost(sc)
    values, probs = request_tok_s_distribution(
        accept_length_pmf(np.full(3, 0.75)),
        200,
        cost.total_ms,
        cost.extend_per_token_ms,
        cost.extend_tokens,
    )
    exact = float(values @ probs)
    se = res.tok_s.std(ddof=1) / math.sqrt(res.tok_s.size)
    assert abs(res.tok_s.mean() - exact) < 4 * se
    # Each cycle's extend is 2.0 + 0.6 (L - 1): the extend phase total is exact per run.
    by_length = 2.0 + 0.6 * np.arange(4)
    assert res.phase_ms[:, 2] == pytest.approx(res.accept_counts @ by_length, rel=1e-12)


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_with_jitter_the_long_run_rate_is_renewal_reward(engine):
    sc = scenario(jitter=0.3, tokens=400, replications=6 if engine == "des" else 20)
    res = simulate(sc, engine=engine)
    cost = cycle_cost(sc)  # the expected cycle, extend at E[L]
    al = float(np.arange(1, 5) @ accept_length_pmf(np.full(3, 0.75)))
    long_run = 1000 * al / cost.total_ms
    rate = 1000 * res.emitted_tokens.sum(axis=1) / res.request_ms.sum(axis=1)
    se = rate.std(ddof=1) / math.sqrt(rate.size)
    assert abs(rate.mean() - long_run) < 4 * se
    ext = res.phase_ms[:, 2] / res.cycles.sum(axis=1)
    se_ext = ext.std(ddof=1) / math.sqrt(ext.size)
    assert abs(ext.mean() - cost.extend_ms) < 4 * se_ext


def test_the_extend_slope_costs_throughput():
    flat = simulate(make({"alpha": 0.75}, k=3, tokens=200, requests=20))
    sloped = simulate(scenario(requests=20, replications=2))
    assert sloped.tok_s.mean() < flat.tok_s.mean()


def test_per_cycle_timing_honours_the_extend_too():
    from sim.binding.bound import bind
    from tests.simulation.test_engines_fast import PerCycleOnly

    sc = scenario(jitter=0.3, tokens=300, replications=10)
    summed = simulate(sc)
    per_cycle = simulate(sc, seed=3, cycle_times=PerCycleOnly(bind(sc).cycle_time_model()))
    for res in (summed, per_cycle):
        ext = res.phase_ms[:, 2] / res.cycles.sum(axis=1)
        se = ext.std(ddof=1) / math.sqrt(ext.size)
        assert abs(ext.mean() - cycle_cost(sc).extend_ms) < 4 * se
    a, b = summed.tok_s.ravel(), per_cycle.tok_s.ravel()
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
