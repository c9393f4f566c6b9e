"""Cycle-time model: deterministic means from the cost model, gamma jitter's mean and variance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.costs import scenario_cycle_cost
from sim.cycletime import PHASES, CostCycleTimes, CycleTimeModel, cycle_time_model
from sim.scenario import load_scenario, with_overrides


def test_default_model_is_the_cost_model(seed_path):
    sc = load_scenario(seed_path)
    model = cycle_time_model(sc)
    assert isinstance(model, CycleTimeModel)
    assert model.deterministic
    assert model.mean_ms() == scenario_cycle_cost(sc).as_dict()
    drawn = model.sample(np.random.default_rng(0), 5)
    assert list(drawn) == list(PHASES)
    assert all((drawn[p] == model.mean_ms()[p]).all() for p in PHASES)


@pytest.mark.parametrize("cv", [0.1, 0.5, 1.5])
def test_gamma_jitter_keeps_the_mean_and_has_the_cv(seed_path, cv):
    sc = with_overrides(load_scenario(seed_path), {"timing.jitter_cv": cv})
    model = cycle_time_model(sc)
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
    from sim.costs import CycleCost

    model = CostCycleTimes(CycleCost(1, 0.0, 20.0, 2.0, 0.0), jitter_cv=0.3)
    drawn = model.sample(np.random.default_rng(0), 100)
    assert (drawn["draft"] == 0).all() and (drawn["overhead"] == 0).all()
    with pytest.raises(ValueError):
        CostCycleTimes(CycleCost(1, 0.0, 20.0, 2.0, 0.0), jitter_cv=-0.1)
