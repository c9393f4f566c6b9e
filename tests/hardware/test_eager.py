"""Eager execution model: hand-worked terms, graphing never slows, SimPy pass = closed form."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.hardware.eager import (
    EAGER_KERNEL_US,
    NATIVE_OP_GPU_US,
    NATIVE_OP_US,
    PIE_348_EAGER_MS,
    PIE_348_GRAPHED_MS,
    EagerCosts,
    calibrate_kernel_us,
    eager_schedule,
    host_ms_from_graphed,
    pie_348_schedule,
    with_layer_gpu_ms,
)
from sim.hardware.launch import (
    calibrate_compute_ms,
    calibrate_cpu_scale,
    critical_path_ms,
    floor_ms,
)
from sim.hardware.layer import LayerPass, sample_layer_pass_ms


def schedule(
    mode, kernel_us=10.0, syncs=0, layers=4, kernels=8, ar_ms=0.02, attention=2, unfused=0
):
    return eager_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=ar_ms,
        tensor_parallel=True,
        costs=EagerCosts(kernel_us=kernel_us, sync_us=3.0, syncs_per_layer=syncs),
        mode=mode,
        attention_kernels=attention,
        unfused_kernels=unfused if mode == "eager" else 0,
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


def single_gpu_layer(kernels, costs, mode, unfused=1):
    """One layer on one GPU (no all-reduces) with ``unfused`` unfused-op kernels."""
    return eager_schedule(
        layers=1,
        kernels_per_layer=kernels,
        allreduces_per_layer=0,
        allreduce_ms=0.0,
        tensor_parallel=False,
        costs=costs,
        mode=mode,
        attention_kernels=1,
        unfused_kernels=unfused,
    )


def test_unfused_op_constants_from_their_sources():
    # vLLM PR #51480: eager fallback 120.5 us ("~8 kernel launches") vs fused 11.8 us.
    per_launch = (120.5 - 11.8) / (8 - 1)
    assert abs(NATIVE_OP_US - per_launch) < 1e-12 and abs(per_launch - 15.529) < 1e-3
    # vLLM PR #55329: GemmaRMSNorm at M = 1, 0.0116 ms native (8 kernels) vs 0.0014 ms.
    per_kernel = (11.6 - 1.4) / (8 - 1)
    assert abs(NATIVE_OP_GPU_US - per_kernel) < 1e-12 and abs(per_kernel - 1.457) < 1e-3


def test_unfused_kernels_hand_worked():
    # 4 layers x 8 kernels at 10 us, 3 unfused kernels a layer at the sourced costs.
    s = schedule("eager", unfused=3)
    assert s.num_kernels == 4 * 11
    assert s.launch_work_ms == pytest.approx(4 * 8 * 0.010 + 4 * 3 * NATIVE_OP_US / 1000)
    assert s.fixed_total_ms == pytest.approx(4 * 2 * 0.02 + 4 * 3 * NATIVE_OP_GPU_US / 1000)
    assert s.compute_share.sum() == pytest.approx(1.0)
    assert int(s.is_allreduce.sum()) == 8
    # Each layer's unfused kernels open its first segment.
    assert s.segment[:3].tolist() == [0, 0, 0] and s.segment[11:14].tolist() == [2, 2, 2]
    # One layer: [unfused (CPU 0.05, GPU 0.01), k0 (0.1, 0.5), k1 (0.1, 0.5)] at 1 ms of
    # compute: T = max(0.05 + 0.01 + 1.0, 0.15 + 1.0, 0.25 + 0.5) = 1.15 ms.
    one = single_gpu_layer(2, EagerCosts(100.0, native_op_us=50.0, native_op_gpu_us=10.0), "eager")
    assert critical_path_ms(one, 1.0) == pytest.approx(1.15)
    for mode in ("graphed", "piecewise"):
        with pytest.raises(ValueError, match="unfused"):
            single_gpu_layer(4, EagerCosts(kernel_us=1.0), mode)


def test_layer_gpu_work_hand_worked():
    # 4 layers x 8 kernels; 0.1 ms more on kernel 1 of each layer: 0.4 ms more GPU work,
    # and at 10 ms of compute (GPU-bound) the pass 0.4 ms longer.
    base = schedule("piecewise")
    more = with_layer_gpu_ms(base, 4, 0.1, 1)
    assert more.fixed_total_ms == pytest.approx(base.fixed_total_ms + 0.4)
    assert np.flatnonzero(more.fixed_ms - base.fixed_ms).tolist() == [1, 9, 17, 25]
    assert critical_path_ms(more, 10.0) == pytest.approx(critical_path_ms(base, 10.0) + 0.4)
    with pytest.raises(ValueError):
        with_layer_gpu_ms(base, 4, 0.1, 8)


def test_host_work_from_a_graphed_step_hand_worked():
    # GPT-2 through vLLM (deepspeedai/DeepSpeed PR #8352): 41.8 ms / 32 steps graphed, a
    # pass of 0.0515 ms at its floor: 1.2547 ms of host work a step.
    assert host_ms_from_graphed(41.8 / 32, 0.0515) == pytest.approx(1.30625 - 0.0515)
    assert host_ms_from_graphed(1.0, 2.0) == 0.0
    with pytest.raises(ValueError):
        host_ms_from_graphed(-1.0, 0.5)


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
    unfused=st.integers(0, 6),
)
def test_graphing_never_slows_a_pass(kernel_us, syncs, compute_ms, ar_ms, mode, unfused):
    graphed = schedule("graphed", ar_ms=ar_ms)
    ungraphed = schedule(mode, kernel_us=kernel_us, syncs=syncs, ar_ms=ar_ms, unfused=unfused)
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
@pytest.mark.parametrize(
    ("kernel_us", "syncs", "unfused"),
    [(0.0, 0, 0), (10.0, 0, 0), (120.0, 0, 0), (40.0, 1, 0), (10.0, 0, 4), (40.0, 1, 2)],
)
def test_layer_level_pass_equals_the_closed_form_without_jitter(mode, kernel_us, syncs, unfused):
    s = schedule(mode, kernel_us=kernel_us, syncs=syncs, layers=6, unfused=unfused)
    lp = LayerPass(s, compute_ms=2.0, ranks=4)
    sim = sample_layer_pass_ms(lp, 1, np.random.default_rng(0))[0]
    assert sim == pytest.approx(critical_path_ms(s, 2.0), rel=1e-9)


@pytest.mark.parametrize("mode", ["graphed", "eager", "piecewise"])
def test_schedules_built_from_one_template_stay_independent(mode):
    """Schedules set from one template (its all-reduces at 0 ms, as a batched pass keeps
    one a physics) share it and nothing else: the first keeps its all-reduce time after
    the second is built, the shared arrays cannot be written, and each is the schedule
    built whole."""
    unfused = 3 if mode == "eager" else 0
    template = schedule(mode, ar_ms=0.0, unfused=unfused)
    first = template.with_allreduce_ms(0.02)
    second = template.with_allreduce_ms(0.5)
    assert first.cpu_ms is second.cpu_ms
    whole = schedule(mode, ar_ms=0.02, unfused=unfused)
    assert all(
        np.array_equal(getattr(first, f.name), getattr(whole, f.name))
        for f in dataclasses.fields(whole)
    )
    ar = first.is_allreduce
    assert np.all(first.fixed_ms[ar] == 0.02) and np.all(second.fixed_ms[ar] == 0.5)
    # the other kernels' fixed time: the unfused ops' GPU time, else none
    assert np.array_equal(first.fixed_ms[~ar], second.fixed_ms[~ar])
    assert first.fixed_ms[~ar].sum() == pytest.approx(4 * unfused * NATIVE_OP_GPU_US / 1000)
    with pytest.raises(ValueError, match="read-only"):
        first.cpu_ms[0] = 1.0
    with pytest.raises(ValueError, match=">= 0"):
        schedule(mode, ar_ms=-0.01, unfused=unfused)
