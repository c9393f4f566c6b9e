"""Hand-worked checks of passes: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.hardware.allreduce import AllReduceTime
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import PRESETS
from sim.hardware.passes import Geometry, HardwarePoint, PassBreakdown, PassShape, compose_pass


def test_one_gpu_eager_pass_has_no_allreduce_kernels_to_launch():
    """passes.py: tensor parallelism only with gpus > 1; 2 layers x (10 - 2) compute kernels x 10 us
    = 0.16 ms."""
    hw = HardwarePoint(PRESETS["nvlink4"], 1, None, False, 10.0)
    geom = Geometry(2, 1, 4096, 10, 2, 2)
    b = compose_pass(PassShape("verify", 4, 2, False), hw, geom, 1.0, "derived")
    assert b.allreduces == 0
    assert b.launch_ms == pytest.approx(2 * 8 * 10.0 / 1000.0)


def test_launch_bound_compares_launch_with_all_gpu_work():
    """passes.py PassBreakdown.launch_bound: launch > compute + comm (1.5 ms < 1.0 + 2 x 0.5 ms)."""
    b = PassBreakdown(
        "verify", 4, False, 1.0, 2, AllReduceTime(500.0, "ring", "LL"), 0, 1.5, 2.5, "x"
    )
    assert b.comm_ms == pytest.approx(1.0) and b.gpu_ms == pytest.approx(2.0)
    assert not b.launch_bound


@pytest.mark.parametrize(
    ("name", "bandwidth_gbps", "bf16_tflops", "memory_gb"),
    [
        ("H100", 3350.0, 989.0, 80.0),  # H100 SXM5 datasheet
        ("H200", 4800.0, 989.0, 141.0),  # H200 SXM datasheet
        ("A100", 2039.0, 312.0, 80.0),  # A100 80GB SXM datasheet
        ("L40S", 864.0, 362.0, 48.0),  # L40S datasheet
        ("RTX-3090", 936.0, 71.0, 24.0),  # GA102 whitepaper
        ("B200", 8000.0, 2250.0, 180.0),  # DGX B200 datasheet
        ("GB200", 8000.0, 2500.0, 186.0),  # GB200 NVL72 per GPU
        ("H100-NVL", 3900.0, 835.5, 94.0),  # H100 datasheet, NVL column: 1,671 sparse / 2
        ("H100-PCIe", 2000.0, 756.0, 80.0),  # H100 datasheet, PCIe column: 1,513 sparse / 2
        ("H20", 4000.0, 148.0, 96.0),  # huggingface.co/hardware/h20
        ("MI300X", 5300.0, 1307.4, 192.0),  # ROCm mi300.md
        ("RTX-PRO-6000", 1792.0, 500.0, 96.0),  # 4,000 FP4 sparse TOPS / 2 / 4
    ],
)
def test_gpu_presets_match_their_cited_datasheets(name, bandwidth_gbps, bf16_tflops, memory_gb):
    """gpus.py: each preset's numbers are the ones its source string cites."""
    g = GPU_PRESETS[name]
    assert (g.memory_bandwidth_gbps, g.bf16_tflops, g.memory_gb) == (
        bandwidth_gbps,
        bf16_tflops,
        memory_gb,
    )
