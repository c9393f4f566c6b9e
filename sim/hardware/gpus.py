"""GPU presets: memory bandwidth and peak dense tensor throughput, from vendor datasheets.

Used to derive compute time when a scenario gives no timings (a roofline: weights read over
HBM bandwidth, FLOPs over peak) and to rescale a calibrated compute time to another GPU.
Peak figures are dense (no 2:4 sparsity) BF16 tensor-core FLOP/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sim.errors import UnknownNameError


@dataclass(frozen=True, slots=True)
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
            "H100-NVL",
            3900.0,
            835.5,
            94.0,
            "NVIDIA H100 datasheet, H100 NVL column: HBM3 94 GB, 3.9 TB/s, BF16 1,671 TFLOPS "
            "with sparsity (835.5 dense); the PCIe card of an NVLink-bridged pair, per GPU",
        ),
        GpuPreset(
            "H100-PCIe",
            2000.0,
            756.0,
            80.0,
            "NVIDIA H100 datasheet, H100 PCIe column: HBM2e 80 GB, 2.0 TB/s, BF16 1,513 "
            "TFLOPS with sparsity (756 dense)",
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
            "B200",
            8000.0,
            2250.0,
            180.0,
            "NVIDIA DGX B200 datasheet (via stas00/ml-engineering compute/accelerator/README.md): "
            "HBM3e 8 TB/s, BF16 2,250 TFLOPS dense (4,500 FP8); 180 GB ('NVIDIA "
            "B200-SXM-180GB', MLCommons inference_results_v6.0 Nebius nebius_b200_n1.json)",
        ),
        GpuPreset(
            "GB200",
            8000.0,
            2500.0,
            186.0,
            "NVIDIA GB200 NVL72, per Blackwell GPU (via stas00/ml-engineering): HBM3e 8 TB/s, "
            "BF16 2,500 TFLOPS dense; 186 GB (MLCommons inference_results_v6.1 Crusoe "
            "GB200-NVL72_GB200-186GB system JSON)",
        ),
        GpuPreset(
            "H20",
            4000.0,
            148.0,
            96.0,
            "NVIDIA H20 (no NVIDIA datasheet found; huggingface.co/hardware/h20): HBM3 96 GB, "
            "4,000 GB/s, 148 TFLOPS FP16/BF16 dense, NVLink 900 GB/s",
        ),
        GpuPreset(
            "MI300X",
            5300.0,
            1307.4,
            192.0,
            "AMD MI300X (ROCm/ROCm docs/conceptual/gpu-arch/mi300.md): HBM3 192 GB, 5.3 TB/s, "
            "BF16 1,307.4 TFLOPS dense; 7 Infinity Fabric links a GPU",
        ),
        GpuPreset(
            "MI355X",
            8000.0,
            2500.0,
            288.0,
            "AMD MI355X (CDNA 4): HBM3E 288 GB ('AMD Instinct MI355X 288GB HBM3e', MLCommons "
            "inference_results_v6.0 AMD system summary), 8 TB/s; BF16 dense 2,500 TFLOPS = half "
            "the 5 PFLOPS FP8 AMD gave at ISSCC 2026 (256 CUs x 8,192 FP8 FLOPS a clock), as "
            "on CDNA 3; secondary sources (press reports of the talk, a vendor's product page), "
            "no AMD datasheet stored",
        ),
        GpuPreset(
            "GB10",
            273.0,
            125.0,
            128.0,
            "NVIDIA GB10 Grace Blackwell (DGX Spark; no NVIDIA datasheet stored): 128 GB "
            "LPDDR5X unified with the CPU, 273 GB/s (huggingface.co/blog/exolabs/"
            "the-dgx-spark-handbook); 1 PFLOP FP4 'theoretical, with sparsity' (a spec sheet "
            "quoting NVIDIA's, dgx-spark.warehack.ing/hardware), / 2 (dense) / 4 (FP4 -> BF16) "
            "= 125 TFLOPS BF16, the RTX-PRO-6000 preset's rule; secondary sources",
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
