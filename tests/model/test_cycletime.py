"""Cycle-time model: deterministic means from the cost model, gamma jitter's mean and variance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
from sim.model.cycle import PHASES
from sim.model.cycletime import CostCycleTimes, CycleTimeModel
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides


def test_default_model_is_the_cost_model(seed_path):
    sc = load_scenario(seed_path)
    model = bind(sc).cycle_time_model()
    assert isinstance(model, CycleTimeModel)
    assert model.deterministic
    assert model.mean_ms() == scenario_cycle_cost(sc).as_dict()
    drawn = model.sample(np.random.default_rng(0), 5)
    assert list(drawn) == list(PHASES)
    assert all((drawn[p] == model.mean_ms()[p]).all() for p in PHASES)


@pytest.mark.parametrize("cv", [0.1, 0.5, 0.95])
def test_gamma_jitter_keeps_the_mean_and_has_the_cv(seed_path, cv):
    sc = with_overrides(load_scenario(seed_path), {"timing.jitter_cv": cv})
    model = bind(sc).cycle_time_model()
    n = 200_000
    drawn = model.sample(np.random.default_rng(11), n)
    for p in PHASES:
        mean, var = model.mean_ms()[p], model.var_ms()[p]
        x = drawn[p]
        assert x.min() > 0
        # 4 standard errors on the mean; the sample variance's SE from the fourth moment
        assert abs(x.mean() - mean) < 4 * np.sqrt(var / n)
        shape = 1 / cv**2
        kurt = 6 / shape  # excess kurtosis of a gamma
        se_var = var * np.sqrt((kurt + 2) / n)
        assert abs(x.var(ddof=1) - var) < 4 * se_var
        assert stats.kstest(x, stats.gamma(shape, scale=mean / shape).cdf).pvalue > 1e-4


def test_zero_mean_phase_stays_zero():
    from sim.model.cycle import CycleCost

    model = CostCycleTimes(CycleCost(1, 0.0, 20.0, 2.0, 0.0), jitter_cv=0.3)
    drawn = model.sample(np.random.default_rng(0), 100)
    assert (drawn["draft"] == 0).all() and (drawn["overhead"] == 0).all()
    with pytest.raises(ValueError):
        CostCycleTimes(CycleCost(1, 0.0, 20.0, 2.0, 0.0), jitter_cv=-0.1)


def test_sum_quantiles_give_the_law_of_n_cycle_totals(seed_path):
    from sim.model.cycletime import SummableCycleTimes

    sc = with_overrides(load_scenario(seed_path), {"timing.jitter_cv": 0.4})
    model = bind(sc).cycle_time_model()
    assert isinstance(model, SummableCycleTimes)
    rng = np.random.default_rng(4)
    n_cycles, m = 7, 20_000
    totals = model.sum_quantiles(rng.random((m, 4)), np.full(m, n_cycles))
    direct = sum(
        np.stack([model.sample(rng, m)[p] for p in PHASES], axis=1) for _ in range(n_cycles)
    )
    for i, p in enumerate(PHASES):
        mean, var = n_cycles * model.mean_ms()[p], n_cycles * model.var_ms()[p]
        assert abs(totals[:, i].mean() - mean) < 4 * np.sqrt(var / m)
        assert stats.ks_2samp(totals[:, i], direct[:, i]).pvalue > 1e-4
    # monotone in the cycle count for fixed uniforms; zero cycles take no time
    u = rng.random((50, 4))
    prev = model.sum_quantiles(u, np.zeros(50, dtype=int))
    assert (prev == 0).all()
    for n in (1, 2, 5, 40, 400):
        cur = model.sum_quantiles(u, np.full(50, n))
        assert (cur >= prev).all()
        prev = cur
