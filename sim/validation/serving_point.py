"""One simulated concurrency of a serving curve: both policies at a closed loop of B users,
the paired speedup of aggregate tok/s and both levels with their Monte Carlo errors
(``simulate_point``), under one seed and replication count for every scored point."""

from __future__ import annotations

from dataclasses import dataclass

from sim.binding.bound import bind
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.validation.monte_carlo import sd_from_ci95

__all__ = ["SERVING_REPLICATIONS", "SERVING_SEED", "Point", "simulate_point"]


#: Monte Carlo of every scored point: replications x measured requests, one root seed.
SERVING_REPLICATIONS = 3
SERVING_SEED = 20261201


@dataclass(frozen=True, slots=True)
class Point:
    """One simulated concurrency: the paired speedup and both aggregate throughputs."""

    speedup: float
    speedup_sd: float
    speculative_tok_s: float
    baseline_tok_s: float
    baseline_sd: float


def simulate_point(scenario: Scenario, batch: int, requests: int | None = None) -> Point:
    """Both policies at a closed loop of ``batch`` users (``requests`` requests, by default
    max(60, 3 batch); the serving replications): the paired speedup of aggregate tok/s and
    both levels, with their Monte Carlo standard errors (from the 95% intervals)."""
    sc = with_load(scenario, concurrency=batch, source="validation")
    requests = max(60, 3 * batch) if requests is None else requests
    sc = with_overrides(sc, {"workload.requests": requests}, source="validation")
    setup = serving_setup(bind(sc), source="validation")
    run = simulate_serving(
        setup.plan, setup.draftings, replications=SERVING_REPLICATIONS, seed=SERVING_SEED
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    ratio = summary.speedup[SPECULATIVE]["aggregate_tok_s"]
    base = summary.policies[BASELINE].aggregate_tok_s

    return Point(
        ratio.mean,
        sd_from_ci95(ratio.ci95, summary.replications),
        summary.policies[SPECULATIVE].aggregate_tok_s.mean,
        base.mean,
        sd_from_ci95(base.ci95, summary.replications),
    )
