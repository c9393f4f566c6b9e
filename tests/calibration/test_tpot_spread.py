"""The per-request spread of acceptance from a batch-1 TPOT spread
(sim/calibration/tpot_spread.py): its law against the model's own pooling, the inversion,
and recovery of a known concentration from the serving simulator's own C = 1 job."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from sim.binding.bound import bind
from sim.calibration.spread_fit import KAPPA_BOUNDS
from sim.calibration.tpot_spread import (
    cv_standard_error,
    kappa_range,
    mean_for_pooled_accept_length,
    median_request_accept_length,
    tpot_cv,
    tpot_spread,
)
from sim.model.acceptance import AcceptanceModel, RateClass, Spread
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.serving.metrics import request_metrics
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import ClosedLoop, Workload

SCENARIO = Path(__file__).parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
#: brentq's tolerance on log kappa and the mean, with room for the quadrature's rounding.
SOLVER_TOL = 1e-7


def test_the_mean_keeps_the_models_pooled_accept_length() -> None:
    """The mean rate found for a pooled accept length gives that accept length in the
    model's own pooling (``AcceptanceModel.cycle_mean_accept_length``)."""
    for k, al, kappa in ((1, 1.6575, 52.0), (3, 2.023, 39.0), (7, 3.322, 46.0)):
        m = mean_for_pooled_accept_length(al, kappa, k)
        model = AcceptanceModel(
            k, (RateClass("r", 1.0, np.full(k, m), Spread(concentration=kappa)),)
        )
        assert model.cycle_mean_accept_length() == pytest.approx(al, rel=SOLVER_TOL)
        # one rate: the closed form sum_j a^j
        a = mean_for_pooled_accept_length(al, None, k)
        assert sum(a**j for j in range(k + 1)) == pytest.approx(al, rel=SOLVER_TOL)


def test_one_rate_leaves_only_the_cycles_sampling_noise() -> None:
    """k = 1 at one rate a: a cycle emits 1 or 2 tokens, mu = 1 + a, s2 = a (1 - a), so the
    CV of cycles / n is sqrt(s2 / (n mu))."""
    a, n = 0.6575, 255
    cv = tpot_cv(1 + a, None, 1, 1 / n)
    assert cv == pytest.approx(math.sqrt(a * (1 - a) / (n * (1 + a))), rel=SOLVER_TOL)


def test_the_inversion_round_trips_and_says_when_there_is_no_spread() -> None:
    al, k, inv = 2.023, 3, 1 / 255
    for kappa in (5.0, 39.0, 400.0):
        cv = tpot_cv(al, kappa, k, inv)
        fit = tpot_spread(al, k, cv, 0.0, inv)
        assert fit.identified
        assert fit.concentration == pytest.approx(kappa, rel=1e-6)
        assert fit.rate_sd == pytest.approx(
            math.sqrt(fit.mean * (1 - fit.mean) / (kappa + 1)), rel=1e-12
        )
    # the plain arm's spread is removed in squares
    cv = tpot_cv(al, 39.0, k, inv)
    plain = 0.02
    assert tpot_spread(al, k, math.hypot(cv, plain), plain, inv).concentration == pytest.approx(
        39.0, rel=1e-6
    )
    # within the sampling noise of one rate: no spread
    noise = tpot_cv(al, None, k, inv)
    flat = tpot_spread(al, k, 0.9 * noise, 0.0, inv)
    assert not flat.identified and flat.concentration == KAPPA_BOUNDS[1]
    wide, narrow = kappa_range(al, k, (0.5 * noise, cv * 1.2), 0.0, inv)
    assert wide < 39.0 and narrow == KAPPA_BOUNDS[1]


def test_the_median_request_is_the_median_rates() -> None:
    """mu at the Beta's median rate, against scipy's quantile (one rate: mu(mean))."""
    m, kappa, k = 0.72, 46.0, 7
    a = float(special.betaincinv(m * kappa, (1 - m) * kappa, 0.5))
    assert median_request_accept_length(m, kappa, k) == pytest.approx(
        sum(a**j for j in range(k + 1)), rel=1e-9
    )
    assert median_request_accept_length(m, None, k) == pytest.approx(
        sum(m**j for j in range(k + 1)), rel=1e-12
    )


def _c1_tpot(scenario, requests: int, seed: int) -> dict[str, np.ndarray]:
    """Each policy's per-request TPOT (ms) of a C = 1 job of ``requests``."""
    sc = with_load(scenario, concurrency=1, source="test")
    setup = serving_setup(bind(sc), source="test")
    job = Workload(
        ClosedLoop(1, 0.0, requests, 1),
        setup.plan.workload.output_tokens,
        setup.plan.workload.input_tokens,
        requests=requests,
    )
    plan = replace(setup.plan, workload=job)
    run = simulate_serving(plan, work_out(plan, setup.policies), replications=1, seed=seed)
    out = {}
    for name in (BASELINE, SPECULATIVE):
        (rec,) = run.records[name]
        tpot = request_metrics(rec)["tpot_ms"]
        out[name] = tpot[np.isfinite(tpot)]
    return out


@pytest.mark.slow
def test_a_simulated_c1_job_with_a_known_spread_recovers_it() -> None:
    """The serving simulator at one request in flight, a chain of 3 at a pooled accept
    length of 2.02 and concentration 39, answers of 256 tokens: the per-request TPOT's CV
    over 3,000 requests, fed back (the plain arm's CV removed), gives a concentration whose
    band at the CV -+ 4 standard errors holds 39."""
    kappa, k, al, tokens, requests = 39.0, 3, 2.023, 256, 3000
    m = mean_for_pooled_accept_length(al, kappa, k)
    sc = with_overrides(
        load_scenario(SCENARIO),
        {
            "speculation.num_steps": k,
            "acceptance.alpha": m,
            "acceptance.concentration": kappa,
            "workload.output_tokens": tokens,
            "workload.requests": requests,
        },
        source="test",
    )
    tpot = _c1_tpot(sc, requests, seed=20261206)
    spec, plain = tpot[SPECULATIVE], tpot[BASELINE]
    assert spec.size == requests
    cv, plain_cv = float(spec.std() / spec.mean()), float(plain.std() / plain.mean())
    se = cv_standard_error(cv, requests)
    inv = 1 / (tokens - 1)
    fit = tpot_spread(al, k, cv, plain_cv, inv)
    wide, narrow = kappa_range(al, k, (cv - 4 * se, cv + 4 * se), plain_cv, inv)
    assert fit.identified
    assert wide <= kappa <= narrow, (fit.concentration, wide, narrow)
    # the band is informative: no wider than a factor 1.5 on either side
    assert narrow / wide < 2.25
