"""Published concurrency curves of speculative decoding, for the serving validation.

Copied from their public sources (cited next to each); each case of
sim/validation/serving_cases.py calibrates on batch 1 and at most one more point of a
curve and scores the others.
"""

from __future__ import annotations

from collections.abc import Mapping

# Li et al., "EAGLE-3: Scaling up Inference Acceleration of Large Language Models via
# Training-Time Test", arXiv 2503.01840 (v3), section 4.3, Table 3: throughput improvement
# over SGLang without speculative sampling, 1x H100, LLaMA-Instruct 3.1 8B, SGLang v0.4.4,
# MT-Bench, no tree, chain length 3. Table 4: SGLang without speculation at batch size 1,
# 158.34 tokens/s.
EAGLE3_PAPER_URL = "https://arxiv.org/abs/2503.01840"
EAGLE3_SGLANG_BASELINE_BS1_TOK_S = 158.34
EAGLE3_SGLANG_TABLE3: Mapping[str, Mapping[int, float]] = {
    "EAGLE-3": {
        2: 1.81,
        4: 1.82,
        8: 1.62,
        16: 1.48,
        24: 1.39,
        32: 1.32,
        48: 1.38,
        56: 1.34,
        64: 1.38,
    },
    "EAGLE": {
        2: 1.40,
        4: 1.38,
        8: 1.23,
        16: 1.02,
        24: 0.93,
        32: 0.94,
        48: 0.88,
        56: 0.99,
        64: 0.99,
    },
}
# Same paper, section 4.4, Table 5: vLLM, RTX 3090, LLaMA-Instruct 3.1 8B, MT-Bench, no
# tree, maximum chain length 2; improvement over vLLM without speculative sampling.
EAGLE3_VLLM_TABLE5: Mapping[str, Mapping[int, float]] = {
    "EAGLE-3": {2: 1.75, 4: 1.68, 8: 1.58, 16: 1.49, 24: 1.42, 32: 1.36, 48: 1.21, 56: 1.01},
    "EAGLE": {2: 1.30, 4: 1.25, 8: 1.21, 16: 1.10, 24: 1.03, 32: 0.93, 48: 0.82, 56: 0.71},
}

# vllm-project/vllm tests (test_acceptance_length, docs/reference.md §Published): Llama-3.1-8B +
# EAGLE-3, K = 3, MT-Bench, T = 0: cumulative per-position acceptance. The same drafter
# family as the paper's EAGLE-3 rows; it gives the EAGLE-3 cases their acceptance, so
# Table 3/5 figures are not needed for it.
VLLM_EAGLE3_CUMULATIVE = (0.7296, 0.5208, 0.3545)

# github.com/voipmonitor/rtx6kpro (README; research notes /work/research/hardware.md,
# section A.1): Kimi-K2.5 (target K2.6 in its hardware table), 8x RTX PRO 6000 Blackwell,
# TP 8, vLLM, eagle3 drafter (lightseekorg/kimi-k2.5-eagle3-mla), "MTP=3" = 3 speculative
# tokens, final image, DCP=1, context 0: aggregate output tok/s against concurrency.
# The report says per-position acceptance stayed at ~45-55%.
RTX6KPRO_URL = "https://github.com/voipmonitor/rtx6kpro"
RTX6KPRO_AGGREGATE_TOK_S: Mapping[str, Mapping[int, float]] = {
    "MTP=3": {
        1: 114.1,
        2: 178.9,
        4: 243.7,
        8: 417.4,
        16: 659.0,
        32: 1055.2,
        64: 1522.0,
        128: 1992.3,
    },
    "no MTP": {
        1: 88.5,
        2: 148.4,
        4: 233.8,
        8: 340.7,
        16: 475.2,
        32: 823.6,
        64: 1330.2,
        128: 2026.3,
    },
}

# llm-d/llm-d guides/spec-decoding/benchmark-results/vllm-qwen3-32b-eagle3/README.md (at
# commit b4099d9d710e7e8c0877110e599211c19c6cf684; PR llm-d/llm-d#2074): Qwen/Qwen3-32B on
# 2x H200 (TP 2, one replica) behind the llm-d router, vLLM, drafter
# RedHatAI/Qwen3-32B-speculator.eagle3 (method eagle3, num_speculative_tokens 3) against
# spec decoding off; inference-perf v0.6.0, constant-rate ladder 1-16 QPS, 120 s a stage,
# random tokens, input ~2048 (normal, sd 1024, 10-4096), output ~256 (normal, sd 128,
# 10-512). Per stage: TPOT p50 (ms), TTFT p50 (s) and request latency p50 (s), "Arm A"
# (baseline) and "Arm B" (spec). Acceptance is not published.
LLMD_QWEN3_URL = (
    "https://github.com/llm-d/llm-d/blob/b4099d9d710e7e8c0877110e599211c19c6cf684/guides/"
    "spec-decoding/benchmark-results/vllm-qwen3-32b-eagle3/README.md"
)
LLMD_QWEN3_TPOT_P50_MS: Mapping[str, Mapping[int, float]] = {
    "baseline": {1: 13.2, 2: 15.1, 4: 24.6, 8: 209.7, 16: 222.5},
    "EAGLE-3": {1: 9.7, 2: 11.7, 4: 21.4, 8: 210.1, 16: 220.7},
}
LLMD_QWEN3_TTFT_P50_S: Mapping[str, Mapping[int, float]] = {
    "baseline": {1: 0.167, 2: 0.166, 4: 0.210, 8: 9.774, 16: 85.730},
    "EAGLE-3": {1: 0.160, 2: 0.191, 4: 0.240, 8: 19.243, 16: 108.233},
}
LLMD_QWEN3_LATENCY_P50_S: Mapping[str, Mapping[int, float]] = {
    "baseline": {1: 3.60, 2: 4.02, 4: 6.29, 8: 55.08, 16: 141.83},
    "EAGLE-3": {1: 2.50, 2: 3.04, 4: 5.53, 8: 68.83, 16: 166.64},
}
