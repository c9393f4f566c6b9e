"""GPU presets: memory bandwidth and peak dense tensor throughput, from NVIDIA datasheets.

Used to derive compute time when a scenario gives no timings (a roofline: weights read over
HBM bandwidth, FLOPs over peak) and to rescale a calibrated compute time to another GPU.
Peak figures are dense (no 2:4 sparsity) BF16 tensor-core FLOP/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sim.errors import UnknownNameError


@dataclass(frozen=True)
class GpuPreset:
    """One GPU: memory bandwidth (GB/s = 1e9 B/s), dense BF16 peak (TFLOP/s), source."""

    name: str
    memory_bandwidth_gbps: float
    bf16_tflops: float
    memory_gb: float
    source: str


GPU_PRESETS: Mapping[str, GpuPreset] = {
    g.name: g
    for g in (
        GpuPreset(
            "H100",
            3350.0,
            989.0,
            80.0,
            "NVIDIA H100 SXM5 datasheet: HBM3 3.35 TB/s, BF16 989 TFLOPS dense "
            "(1,979 with sparsity)",
        ),
        GpuPreset(
            "H200",
            4800.0,
            989.0,
            141.0,
            "NVIDIA H200 SXM datasheet: HBM3e 4.8 TB/s, BF16 989 TFLOPS dense "
            "(1,979 with sparsity)",
        ),
        GpuPreset(
            "A100",
            2039.0,
            312.0,
            80.0,
            "NVIDIA A100 80GB SXM datasheet: HBM2e 2,039 GB/s, BF16 312 TFLOPS dense",
        ),
        GpuPreset(
            "L40S",
            864.0,
            362.0,
            48.0,
            "NVIDIA L40S datasheet: GDDR6 864 GB/s, BF16 362 TFLOPS dense (733 with sparsity)",
        ),
        GpuPreset(
            "RTX-3090",
            936.0,
            71.0,
            24.0,
            "NVIDIA Ampere GA102 GPU architecture whitepaper: GeForce RTX 3090 GDDR6X "
            "936 GB/s; peak BF16 tensor 71 TFLOPS with FP32 accumulate dense (142 sparse)",
        ),
        GpuPreset(
            "RTX-PRO-6000",
            1792.0,
            500.0,
            96.0,
            "NVIDIA RTX PRO 6000 Blackwell datasheet: GDDR7 1,792 GB/s; 4,000 AI TOPS "
            "is FP4 with sparsity, / 2 (dense) / 4 (FP4 -> BF16) = 500 TFLOPS BF16",
        ),
    )
}


def gpu_preset(name: str) -> GpuPreset:
    """The preset called ``name``; ``UnknownNameError`` listing the presets otherwise."""
    try:
        return GPU_PRESETS[name]
    except KeyError:
        raise UnknownNameError("GPU", name, tuple(GPU_PRESETS)) from None
