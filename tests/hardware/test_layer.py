"""Layer-level SimPy pass against the decomposition and order statistics."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.decompose import scenario_hardware
from sim.binding.drawn_cycle_times import sample_pass_ms
from sim.hardware.jitter import (
    expected_max_multiplier,
    max_multiplier_variance,
    multiplier_distribution,
)
from sim.hardware.launch import critical_path_ms, kernel_schedule
from sim.hardware.layer import LayerPass, sample_layer_pass_ms
from sim.scenario.load import load_scenario
from tests.conftest import SEED


def schedule(launch_ms: float, layers: int = 20, kernels: int = 4, ar_ms: float = 0.01):
    return kernel_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=ar_ms,
        tensor_parallel=True,
        launch_ms=launch_ms,
    )


@pytest.mark.parametrize(
    "sets",
    [[], ["hardware.interconnect=nvlink4"], ["timing.verify_cuda_graph=true"], ["hardware.gpus=4"]],
)
@pytest.mark.parametrize("name", ["decode", "verify", "draft_extend"])
def test_without_jitter_equals_the_decomposition(sets, name):
    scenario = load_scenario(SEED, sets)
    draws = sample_pass_ms(scenario, scenario_hardware(scenario), name, 2, np.random.default_rng(0))
    expected = scenario_hardware(scenario).breakdown(name).total_ms
    assert draws == pytest.approx([expected, expected], rel=1e-9)


@pytest.mark.parametrize("launch_ms", [0.0, 0.004, 0.05, 0.2])
def test_without_jitter_equals_the_critical_path(launch_ms):
    lp = LayerPass(schedule(launch_ms), compute_ms=4.0, ranks=4)
    sim = sample_layer_pass_ms(lp, 1, np.random.default_rng(0))[0]
    assert sim == pytest.approx(critical_path_ms(lp.schedule, 4.0), rel=1e-9)


def test_launch_bound_regime_emerges():
    # 80 kernels x 0.2 ms of launch = 16 ms against 4.4 ms of GPU work.
    lp = LayerPass(schedule(0.2), compute_ms=4.0, ranks=4)
    t = sample_layer_pass_ms(lp, 1, np.random.default_rng(0))[0]
    assert t == pytest.approx(80 * 0.2 + 0.01, rel=1e-9)  # last launch + last all-reduce
    # More compute does not slow a launch-bound pass (until the GPU catches up).
    lp2 = LayerPass(schedule(0.2), compute_ms=6.0, ranks=4)
    assert sample_layer_pass_ms(lp2, 1, np.random.default_rng(0))[0] == pytest.approx(t)


def test_multiplier_distribution_theory():
    d = multiplier_distribution(0.3)
    assert d.mean() == pytest.approx(1.0) and d.std() == pytest.approx(0.3)
    assert expected_max_multiplier(0.3, 1) == 1.0
    # Max of n grows with n, and its mean exceeds 1 (straggler).
    assert 1.0 < expected_max_multiplier(0.3, 2) < expected_max_multiplier(0.3, 8)
    rng = np.random.default_rng(7)
    draws = rng.gamma(1 / 0.09, 0.09, size=(200_000, 8)).max(axis=1)
    se = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - expected_max_multiplier(0.3, 8)) < 4 * se
    assert draws.var() == pytest.approx(max_multiplier_variance(0.3, 8), rel=0.02)


@pytest.mark.parametrize(("ranks", "cv"), [(8, 0.3), (4, 0.15), (2, 0.5)])
def test_jitter_costs_the_expected_max_per_barrier(ranks, cv):
    """Graphed: each of the 40 segments lasts (max over ranks of compute) + all-reduce."""
    segments, compute_ms, ar_ms, reps = 40, 4.0, 0.01, 300
    lp = LayerPass(schedule(0.0, ar_ms=ar_ms), compute_ms=compute_ms, ranks=ranks, jitter_cv=cv)
    draws = sample_layer_pass_ms(lp, reps, np.random.default_rng(20261130))
    per_segment = compute_ms / segments
    mean = segments * (per_segment * expected_max_multiplier(cv, ranks) + ar_ms)
    se = np.sqrt(segments * per_segment**2 * max_multiplier_variance(cv, ranks) / reps)
    assert abs(draws.mean() - mean) < 4 * se
    no_jitter = compute_ms + segments * ar_ms
    assert draws.mean() - no_jitter > 10 * se  # the straggler cost is real


def test_launch_bound_hides_jitter():
    """With the CPU far behind, ranks wait for launches and jitter costs (almost) nothing."""
    lp = LayerPass(schedule(0.2), compute_ms=4.0, ranks=8, jitter_cv=0.3)
    draws = sample_layer_pass_ms(lp, 20, np.random.default_rng(3))
    no_jitter = critical_path_ms(lp.schedule, 4.0)
    assert np.all(draws - no_jitter < 0.05 * (expected_max_multiplier(0.3, 8) - 1) * 4.0)


def test_same_seed_same_draws():
    scenario = load_scenario(SEED, ["hardware.rank_jitter_cv=0.1"])
    hw = scenario_hardware(scenario)
    a = sample_pass_ms(scenario, hw, "verify", 3, np.random.default_rng(5))
    b = sample_pass_ms(scenario, hw, "verify", 3, np.random.default_rng(5))
    assert a.shape == (3,) and np.array_equal(a, b)
    assert np.all(a > 30.0 - 1e-9)
