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
