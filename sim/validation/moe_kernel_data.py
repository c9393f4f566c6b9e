"""Public fused-MoE kernel times against tokens (one MoE layer, random routing).

The curves, their sources and settings are in sim/validation/data/moe_kernels.toml: each
is the time of one layer's fused MoE (both expert GEMMs, activation, top-k sum) over M
tokens whose gating logits are random, i.e. near-uniform independent routing, which the
union law assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.validation.data_files import curve, read_table


@dataclass(frozen=True, slots=True)
class KernelCurve:
    """One MoE layer's kernel time (us) against tokens: the routing (E experts, e per
    token), the bytes of one expert per tensor-parallel rank and the GPU it ran on."""

    name: str
    source: str
    experts: int
    per_token: int
    expert_bytes: float
    gpu: str
    us: dict[int, float]


_DATA = read_table("moe_kernels")


def _kernel_curve(row: dict) -> KernelCurve:
    """An expert's bytes per rank: its shape's parameters x bytes per parameter / tp."""
    expert_bytes = math.prod(row["expert_shape"]) * row["bytes_per_param"] / row["tp"]
    return KernelCurve(
        row["name"], row["source"], row["experts"], row["per_token"], expert_bytes, row["gpu"],
        curve(row["us"]),
    )  # fmt: skip


_CURVES = {row["key"]: _kernel_curve(row) for row in _DATA["curve"]}
MIXTRAL_BF16_TP2_H100 = _CURVES["MIXTRAL_BF16_TP2_H100"]
QWEN3_30B_FP8_TP1_H100 = _CURVES["QWEN3_30B_FP8_TP1_H100"]
QWEN3_235B_FP8_TP8_H200 = _CURVES["QWEN3_235B_FP8_TP8_H200"]

#: Calibration (fitted together) and scored curves.
CALIBRATION = tuple(_CURVES[r["key"]] for r in _DATA["curve"] if r["role"] == "calibration")
SCORED = tuple(_CURVES[r["key"]] for r in _DATA["curve"] if r["role"] == "scored")

#: vllm-project/vllm issue #32832: the two triton MoE kernels of a serving step, H200 TP8:
#: (name, experts, per token, expert bytes per rank, us).
SERVING_STEP_URL: str = _DATA["serving_step"]["source"]
SERVING_STEP: tuple[tuple[str, int, int, float, float], ...] = tuple(
    (name, experts, per_token, math.prod(_DATA["serving_step"]["shape"]) * bytes_per_param, us)
    for name, experts, per_token, bytes_per_param, us in _DATA["serving_step"]["steps"]
)
