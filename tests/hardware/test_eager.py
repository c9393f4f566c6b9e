"""Eager execution model: hand-worked terms, graphing never slows, SimPy pass = closed form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.hardware.eager import (
    EAGER_KERNEL_US,
    PIE_348_EAGER_MS,
    PIE_348_GRAPHED_MS,
    EagerCosts,
    calibrate_kernel_us,
    eager_schedule,
    pie_348_schedule,
)
from sim.hardware.launch import (
    calibrate_compute_ms,
    calibrate_cpu_scale,
    critical_path_ms,
    floor_ms,
)
from sim.hardware.layer import LayerPass, sample_layer_pass_ms


def schedule(mode, kernel_us=10.0, syncs=0, layers=4, kernels=8, ar_ms=0.02, attention=2):
    return eager_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=ar_ms,
        tensor_parallel=True,
        costs=EagerCosts(kernel_us=kernel_us, sync_us=3.0, syncs_per_layer=syncs),
        mode=mode,
        attention_kernels=attention,
    )


def test_pie_calibration_reproduces_the_constant():
    # Launch-bound: 1200 kernels x c + the last kernel's 15.39 / 1200 ms = 22.68 ms.
    c = calibrate_kernel_us(pie_348_schedule, PIE_348_GRAPHED_MS, PIE_348_EAGER_MS)
    assert c == pytest.approx((PIE_348_EAGER_MS - PIE_348_GRAPHED_MS / 1200) / 1200 * 1000)
    assert c == pytest.approx(EAGER_KERNEL_US, abs=1e-3)
    assert critical_path_ms(pie_348_schedule(c), PIE_348_GRAPHED_MS) == pytest.approx(22.68)


def test_cpu_work_per_mode_hand_worked():
    # 4 layers x 8 kernels (6 compute + 2 all-reduces), 10 us each when eager.
    assert schedule("graphed").launch_work_ms == 0.0
    assert schedule("eager").launch_work_ms == pytest.approx(4 * 8 * 0.010)
    # Piecewise: per layer the 2 attention kernels plus one piece launch, + the first piece.
    assert schedule("piecewise").launch_work_ms == pytest.approx((4 * 3 + 1) * 0.010)
    with pytest.raises(ValueError, match="attention_kernels"):
        schedule("piecewise", attention=3)  # the first segment has 3 compute kernels
    with pytest.raises(ValueError, match="mode"):
        schedule("lazy")


def test_critical_path_with_syncs_hand_worked():
    # 1 layer, 4 kernels: compute, AR, compute, AR; compute 1 ms split in 2; AR 0.1 ms;
    # 0.2 ms of CPU per kernel; one sync on the last compute kernel (index 2).
    s = eager_schedule(
        layers=1,
        kernels_per_layer=4,
        allreduces_per_layer=2,
        allreduce_ms=0.1,
        tensor_parallel=True,
        costs=EagerCosts(kernel_us=200.0, sync_us=50.0, syncs_per_layer=1),
        mode="eager",
    )
    assert s.host_sync.tolist() == [False, False, True, False]
    # Stretch 1 (kernels 0-2): max(0.2 + 0.5 + 0.1 + 0.5, 0.4 + 0.1 + 0.5, 0.6 + 0.5) =
    # 1.3 ms; then the sync: 0.05 ms; stretch 2 (kernel 3): 0.2 + 0.1 = 0.3 ms.
    assert critical_path_ms(s, 1.0) == pytest.approx(1.3 + 0.05 + 0.3)
    assert s.syncs_ms == pytest.approx(0.05)


@settings(max_examples=60, deadline=None)
@given(
    kernel_us=st.floats(0.0, 80.0),
    syncs=st.integers(0, 2),
    compute_ms=st.floats(0.0, 20.0),
    ar_ms=st.floats(0.0, 0.1),
    mode=st.sampled_from(["eager", "piecewise"]),
)
def test_graphing_never_slows_a_pass(kernel_us, syncs, compute_ms, ar_ms, mode):
    graphed = schedule("graphed", ar_ms=ar_ms)
    ungraphed = schedule(mode, kernel_us=kernel_us, syncs=syncs, ar_ms=ar_ms)
    assert critical_path_ms(graphed, compute_ms) <= critical_path_ms(ungraphed, compute_ms) + 1e-12
    # And the graphed pass is exactly its GPU work.
    assert critical_path_ms(graphed, compute_ms) == pytest.approx(
        compute_ms + graphed.fixed_total_ms, rel=1e-12, abs=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(
    kernel_us=st.floats(0.5, 80.0),
    syncs=st.integers(0, 2),
    extra_ms=st.floats(0.0, 30.0),
    mode=st.sampled_from(["eager", "piecewise"]),
)
def test_calibrations_invert_the_critical_path(kernel_us, syncs, extra_ms, mode):
    s = schedule(mode, kernel_us=kernel_us, syncs=syncs)
    measured = floor_ms(s) + extra_ms
    x = calibrate_compute_ms(s, measured)
    assert critical_path_ms(s, x) == pytest.approx(measured, rel=1e-12, abs=1e-12)
    assert critical_path_ms(s, x * (1 + 1e-9) + 1e-9) > measured  # the largest such x
    # The CPU scale that gives the same time back at that compute is 1 (or more when the
    # pass does not depend on CPU work there).
    assert calibrate_cpu_scale(s, x, measured) >= 1.0 - 1e-9


def test_cpu_scale_is_exact_when_launch_bound():
    s = schedule("eager", kernel_us=1.0, ar_ms=0.0)  # 32 kernels, 1 us each at scale 1
    # Launch-bound at 0.1 ms of compute: T = 32 c + the last kernel (an all-reduce, 0 ms).
    c = calibrate_cpu_scale(s, 0.1, 3.2)
    assert c * 32 * 0.001 == pytest.approx(3.2, rel=1e-12)
    with pytest.raises(ValueError, match="GPU work alone"):
        calibrate_cpu_scale(s, 5.0, 3.0)


@pytest.mark.parametrize("mode", ["graphed", "eager", "piecewise"])
@pytest.mark.parametrize(("kernel_us", "syncs"), [(0.0, 0), (10.0, 0), (120.0, 0), (40.0, 1)])
def test_layer_level_pass_equals_the_closed_form_without_jitter(mode, kernel_us, syncs):
    s = schedule(mode, kernel_us=kernel_us, syncs=syncs, layers=6)
    lp = LayerPass(s, compute_ms=2.0, ranks=4)
    sim = sample_layer_pass_ms(lp, 1, np.random.default_rng(0))[0]
    assert sim == pytest.approx(critical_path_ms(s, 2.0), rel=1e-9)
