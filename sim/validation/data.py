"""Published speculative-decoding figures that specsim's validation report reconstructs.

Each figure is copied from its public source (cited next to it) and is used either to
calibrate a scenario or to score one, never both (sim/validation/cases.py enforces the split).
Printed precision matters: a figure printed with d decimals carries a rounding error of
0.5 x 10^-d, whose standard deviation 10^-d / sqrt(12) is the sigma used when fitting it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.binding.cross_run import (  # noqa: F401  (re-exported: the report's data in one place)
    MULTI_K,
    MULTI_K_CALIBRATE_UP_TO,
    SGLANG_4247_AL,
    SGLANG_4247_URL,
    SPECULATORS_563,
    SPECULATORS_563_URL,
    VLLM_16035_AL,
    VLLM_16035_URL,
    VLLM_20780_AL,
    VLLM_20780_URL,
    MultiKSeries,
    rounding_sigma,
)


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One measured run: num_steps k, accept length and tok/s (None when not published)."""

    num_steps: int
    accept_length: float
    tok_s: float | None


# vllm-project/vllm issue #20780 (2025-07-10): Llama-3.1-8B-Instruct + EAGLE-3
# (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), vLLM V1 chain drafting, H100, batch 1, MT-Bench.
# Accept length per K and TPOT (ms) per K; vanilla TPOT 7.07 ms. tok/s = 1000 / TPOT.
VLLM_20780_VANILLA_TPOT_MS = 7.07
VLLM_20780_EAGLE3: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, VLLM_20780_AL.accept_lengths[k], 1000.0 / tpot)
    for k, tpot in ((2, 4.32), (3, 4.09), (4, 4.05), (5, 4.13), (6, 4.20), (7, 4.29))
)

# sgl-project/sglang PR #4247 ("[Feature] Support EAGLE 3"), comment by chromecast56,
# 2025-03-10, with CUDA graphs: Llama-3.1-8B, MT-bench (80 questions), one GPU.
# (topk / num_draft_tokens are not stated in the comment.)
SGLANG_4247: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, SGLANG_4247_AL.accept_lengths[k], tok_s)
    for k, tok_s in ((5, 361.70), (8, 378.57))
)

# vllm-project/vllm PR #16035 ("[V1][Spec Decode] Eagle Model loading"), comment by
# ekagra-ranjan, 2025-04-09: Llama-3-8B-Instruct + lmsys/sglang-EAGLE-LLaMA3-Instruct-8B,
# vLLM V1 offline (examples/offline_inference/eagle.py, max_num_seqs 1), MT-Bench; output
# tok/s as printed ("est. speed ... output"), accept length as printed. GPU not stated.
VLLM_16035_VANILLA_TOK_S = 128.64
VLLM_16035: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, VLLM_16035_AL.accept_lengths[k], tok_s)
    for k, tok_s in ((2, 175.49), (4, 165.65))
)

# vLLM tests/spec_decode test_acceptance_length (docs/reference.md §Published): Llama-3.1-8B +
# EAGLE-3, K = 3, MT-Bench, temperature 0: AL 2.60, cumulative per-position rates.
VLLM_ACCEPTANCE_TEST_AL = 2.60
VLLM_ACCEPTANCE_TEST_CUMULATIVE = (0.7296, 0.5208, 0.3545)

# vllm-project/vllm PR #26498, "[SpecBench], Padding Enabled (Fixed), K=10" block:
# counters and vLLM's printed "acceptance at token i" (cumulative rates, two decimals).
VLLM_26498_URL = "https://github.com/vllm-project/vllm/pull/26498"
VLLM_26498_DRAFTS = 20468
VLLM_26498_DRAFT_TOKENS = 204680
VLLM_26498_ACCEPTED = 48266
VLLM_26498_PRINTED_AL = 3.36
VLLM_26498_CUMULATIVE = (0.71, 0.50, 0.36, 0.26, 0.18, 0.13, 0.10, 0.07, 0.04, 0.02)

# vllm-project/vllm issue #26191: EAGLE-3 K = 7 counters and the printed accept length.
VLLM_26191_URL = "https://github.com/vllm-project/vllm/issues/26191"
VLLM_26191_DRAFTS = 4816
VLLM_26191_DRAFT_TOKENS = 33712
VLLM_26191_ACCEPTED = 12208
VLLM_26191_PRINTED_AL = 3.53

# Seed (docs/reference.md §Seed): Kimi-K2.5, 8 PCIe GPUs, EAGLE-3 k = 2.
SEED_BASELINE_TOK_S = (82.0, 83.0)
SEED_SPEC_TOK_S = (59.0, 61.0)
SEED_ACCEPT_LENGTH = 2.0
SEED_VERIFY_MS = 30.0
SEED_REFERENCE_BREAK_EVEN_AL = 2.46  # 82 tok/s x 30 ms
SEED_REFERENCE_NEEDED_AL = {150.0: 4.5, 200.0: 6.0}  # target x 30 ms


# voipmonitor/rtx6kpro (docs/reference.md §All-reduce): Kimi on 8 PCIe GPUs (RTX PRO 6000 class),
# SGLang EAGLE-3 at 2k context; making the verify pass fully CUDA-graphed raised the
# speculative throughput from 75.0 to 116.6 tok/s. num_steps and accept length not given.
GRAPHED_VERIFY_SOURCE = "voipmonitor/rtx6kpro (docs/reference.md §All-reduce)"
GRAPHED_VERIFY_BEFORE_TOK_S = 75.0
GRAPHED_VERIFY_AFTER_TOK_S = 116.6
