"""Hand-worked checks of eager: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.hardware.eager import NATIVE_OP_GPU_US, NATIVE_OP_US, EagerCosts, eager_schedule
from sim.hardware.launch import KernelSchedule, critical_path_ms


def test_piecewise_launches_sit_on_the_attention_kernels_and_the_next_piece():
    """eager.py docstring: attention kernels 1..a of each layer eager, the captured piece after them
    one launch at a + 1 (plus the pass's first launch)."""
    s = eager_schedule(
        layers=2,
        kernels_per_layer=8,
        allreduces_per_layer=2,
        allreduce_ms=0.01,
        tensor_parallel=True,
        costs=EagerCosts(kernel_us=10.0),
        mode="piecewise",
        attention_kernels=2,
    )
    per_layer = s.num_kernels // 2
    assert np.flatnonzero(s.cpu_ms[:per_layer]).tolist() == [0, 1, 2, 3]
    # later layers: the next layer's projection rides in the previous piece
    assert np.flatnonzero(s.cpu_ms[per_layer:]).tolist() == [1, 2, 3]
    assert s.launch_work_ms == pytest.approx((1 + 2 * 3) * 0.010)


def test_scaled_scales_every_cpu_cost_but_not_gpu_time():
    """eager.py EagerCosts.scaled: kernel, all-reduce call and native-op CPU costs x factor; GPU
    time unchanged."""
    c = EagerCosts(kernel_us=10.0, allreduce_us=20.0).scaled(2.0)
    assert (c.kernel_us, c.allreduce_us) == (20.0, 40.0)
    assert c.native_op_us == pytest.approx(2.0 * NATIVE_OP_US)
    assert c.native_op_gpu_us == pytest.approx(NATIVE_OP_GPU_US)


def test_a_sync_on_the_last_kernel_adds_nothing():
    """launch.py: T = sum of stretches + syncs *before the last kernel* x sync_ms; a final sync ends
    the pass anyway."""
    s = KernelSchedule(
        compute_share=np.array([0.5, 0.5]),
        fixed_ms=np.zeros(2),
        is_allreduce=np.zeros(2, dtype=bool),
        segment=np.zeros(2, dtype=int),
        cpu_ms=np.array([0.001, 0.001]),
        host_sync=np.array([False, True]),
        sync_ms=0.5,
    )
    assert s.syncs_ms == 0.0
    # graph-free pass, GPU-bound: c_0 + x = 0.001 + 1.0
    assert critical_path_ms(s, 1.0) == pytest.approx(1.001)
