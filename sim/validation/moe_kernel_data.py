"""Public fused-MoE kernel times against tokens (one MoE layer, random routing).

Each curve is ``benchmark_moe.py`` (vLLM benchmarks/kernels) or SGLang's
``tuning_fused_moe_triton.py`` output: the time of one layer's fused MoE (both expert GEMMs,
activation, top-k sum) over M tokens whose gating logits are random, i.e. near-uniform
independent routing, which the union law assumes. Copied from the cited threads.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    bytes_per_param: float = 1.0


#: vllm-project/vllm PR #24700 ("Improve default fused moe configs", H100): Mixtral-8x7B
#: BF16 TP2 with its tuned config (E=8, N=7168): an expert is 3 x 4096 x 14336 BF16
#: parameters, 176 MB per rank at TP2.
MIXTRAL_BF16_TP2_H100 = KernelCurve(
    "Mixtral-8x7B BF16 TP2, vLLM tuned config, H100",
    "https://github.com/vllm-project/vllm/pull/24700",
    8,
    2,
    3 * 4096 * 14336 * 2 / 2,
    "H100",
    {
        1: 144.03,
        2: 229.28,
        4: 351.10,
        8: 434.98,
        16: 471.49,
        24: 478.27,
        32: 487.35,
        48: 487.85,
        64: 483.14,
        96: 494.42,
        128: 491.39,
    },
    bytes_per_param=2.0,
)

#: Same PR: Qwen3-30B-A3B FP8 (fp8_w8a8) TP1, main's default config: an expert is
#: 3 x 2048 x 768 FP8 parameters (4.7 MB).
QWEN3_30B_FP8_TP1_H100 = KernelCurve(
    "Qwen3-30B-A3B FP8 TP1, vLLM main default config, H100",
    "https://github.com/vllm-project/vllm/pull/24700",
    128,
    8,
    3 * 2048 * 768 * 1.0,
    "H100",
    {
        1: 44.54,
        2: 59.94,
        4: 90.46,
        8: 129.77,
        16: 185.40,
        24: 215.99,
        32: 238.37,
        48: 257.83,
        64: 262.73,
        96: 270.98,
        128: 273.72,
    },
)

#: sgl-project/sglang PR #11730 ("add tuned fuse moe kernel for qwen3 235b fp8 on h200"),
#: "Without tuned kernel": Qwen3-235B-A22B FP8 TP8 on H200 (E=128, top-8; an expert is
#: 3 x 4096 x 1536 FP8 parameters, 2.36 MB per rank at TP8).
QWEN3_235B_FP8_TP8_H200 = KernelCurve(
    "Qwen3-235B-A22B FP8 TP8, SGLang default config, H200",
    "https://github.com/sgl-project/sglang/pull/11730",
    128,
    8,
    3 * 4096 * 1536 * 1.0 / 8,
    "H200",
    {1: 31.70, 2: 36.56, 4: 49.67, 8: 66.87, 16: 92.36, 24: 117.38, 32: 124.99},
)

#: Calibration (fitted together) and scored curves.
CALIBRATION = (MIXTRAL_BF16_TP2_H100, QWEN3_30B_FP8_TP1_H100)
SCORED = (QWEN3_235B_FP8_TP8_H200,)

#: The same two PR #24700 runs beyond 128 tokens, where every expert is read (Mixtral's 8
#: from 8 tokens, Qwen3's 128 from about 64): the time grows with the token-expert pairs
#: multiplied, which gives their FLOP efficiency (sim/hardware/experts.py
#: ``PAIR_FLOP_EFFICIENCY``). Mixtral's printed run stops at 1,536 tokens.
SATURATED_US: dict[str, dict[int, float]] = {
    MIXTRAL_BF16_TP2_H100.name: {256: 536.77, 512: 662.33, 1024: 833.72, 1536: 1122.93},
    QWEN3_30B_FP8_TP1_H100.name: {
        256: 355.49,
        512: 391.86,
        1024: 536.33,
        1536: 727.31,
        2048: 911.64,
        3072: 1279.17,
        4096: 1647.57,
    },
}

#: vllm-project/vllm PR #44152 (comment of 2026-06-01): one ``fused_moe_kernel`` call (the
#: first expert GEMM alone, N = 14336 by K = 4096, BF16) of Mixtral-8x7B's shape (E=8,
#: top-2) on an H20 with vLLM's default config, 1.101 ms at 512 tokens and 3.588 ms at
#: 2,048: held out from the efficiency's fit (another GPU, a single GEMM).
H20_GEMM_URL = "https://github.com/vllm-project/vllm/pull/44152"
H20_MIXTRAL_GEMM1_MS: dict[int, float] = {512: 1.101, 2048: 3.588}
H20_MIXTRAL_GEMM1_PARAMS = 14336 * 4096

#: vllm-project/vllm issue #32832 (nsys of a serving generation step, H200, TP8, conc 16,
#: real routing): "2 triton MoE kernels take about 109us" for DeepSeek-V3.1 (block FP8,
#: 256 experts, top-8, intermediate 2048 -> 3 x 7168 x 256 per rank) and "234us" for
#: Kimi-K2-Instruct (w4a16 INT4, 384 experts, top-8, same shapes at 0.5 byte).
SERVING_STEP_URL = "https://github.com/vllm-project/vllm/issues/32832"
SERVING_STEP: tuple[tuple[str, int, int, float, float], ...] = (
    ("DeepSeek-V3.1 FP8 TP8, vLLM, H200, conc 16", 256, 8, 3 * 7168 * 256 * 1.0, 109.0),
    ("Kimi-K2 INT4 TP8, vLLM, H200, conc 16", 384, 8, 3 * 7168 * 256 * 0.5, 234.0),
)
