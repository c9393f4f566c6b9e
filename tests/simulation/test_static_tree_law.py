"""A static tree's accept length in the Monte Carlo follows the exact law of the rank model:
P(L >= d + 1) = the sum over depth-d nodes of the product of q(depth, rank) along the path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.model.tree.inputs import EAGLE1_DEFAULT
from sim.model.tree.presets import rank_profile
from sim.scenario.load import load_scenario
from sim.simulation.simulate import simulate
from sim.simulation.summary import accept_count_totals

EAGLE1 = Path(__file__).resolve().parents[1] / "data" / "trees" / "eagle1.toml"


def exact_pmf(paths, alpha: float, profile: tuple[float, ...]) -> np.ndarray:
    """P(L = d + 1), d = 0..depth, by hand: the top-1 rate alpha at every depth, rank r >= 1
    with (1 - alpha) p_r / (1 - p_1) (the residual-share rule)."""
    q = [alpha] + [(1 - alpha) * p / (1 - profile[0]) for p in profile[1:]]
    depth = max(len(p) for p in paths)
    survival = np.zeros(depth + 1)
    survival[0] = 1.0
    for path in paths:
        survival[len(path)] += np.prod([q[r] for r in path])
    return survival - np.append(survival[1:], 0.0)


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_accept_length_pmf_matches_the_exact_law(engine):
    scenario = load_scenario(EAGLE1, ["workload.output_tokens=2000"])
    result = simulate(scenario, engine=engine, replications=4, requests=30, seed=11)
    counts = accept_count_totals(result)
    n = counts.sum()
    p = exact_pmf(EAGLE1_DEFAULT, 0.8, rank_profile("sequoia-jf68m-llama2-7b").rates)
    se = np.sqrt(p * (1 - p) / n)
    assert n > 20_000
    assert np.all(np.abs(counts / n - p) < 4 * se), (counts / n, p)
    # and the closed form the analysis prints is that law
    assert np.allclose(result.acceptance.cycle_pmf(), p, rtol=0, atol=1e-12)


def test_rank_rates_by_depth_law_in_the_monte_carlo():
    path = EAGLE1.parent / "by-depth.toml"
    result = simulate(load_scenario(path), engine="des", replications=4, requests=40, seed=5)
    counts = accept_count_totals(result)
    n = counts.sum()
    s1, s2, s3 = 0.85, 0.7 * 0.8 + 0.15 * 0.6, 0.7 * 0.6 * 0.5  # by hand, as the scenario test
    p = np.array([1 - s1, s1 - s2, s2 - s3, s3])
    se = np.sqrt(p * (1 - p) / n)
    assert n > 10_000
    assert np.all(np.abs(counts / n - p) < 4 * se), (counts / n, p)
