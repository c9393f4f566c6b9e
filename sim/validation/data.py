"""Published speculative-decoding figures that specsim's validation report reconstructs.

Each figure is copied from its public source (cited next to it) and is used either to
calibrate a scenario or to score one, never both (sim/validation.py enforces the split).
Printed precision matters: a figure printed with d decimals carries a rounding error of
0.5 x 10^-d, whose standard deviation 10^-d / sqrt(12) is the sigma used when fitting it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublishedRun:
    """One measured run: num_steps k, accept length and tok/s (None when not published)."""

    num_steps: int
    accept_length: float
    tok_s: float | None


# vllm-project/vllm issue #20780 (2025-07-10): Llama-3.1-8B-Instruct + EAGLE-3
# (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), vLLM V1 chain drafting, H100, batch 1, MT-Bench.
# Accept length per K and TPOT (ms) per K; vanilla TPOT 7.07 ms. tok/s = 1000 / TPOT.
VLLM_20780_URL = "https://github.com/vllm-project/vllm/issues/20780"
VLLM_20780_VANILLA_TPOT_MS = 7.07
VLLM_20780_EAGLE3: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, al, 1000.0 / tpot)
    for k, al, tpot in (
        (2, 2.36, 4.32),
        (3, 2.79, 4.09),
        (4, 3.08, 4.05),
        (5, 3.32, 4.13),
        (6, 3.46, 4.20),
        (7, 3.54, 4.29),
    )
)

# sgl-project/sglang PR #4247 ("[Feature] Support EAGLE 3"), comment by chromecast56,
# 2025-03-10, with CUDA graphs: Llama-3.1-8B, MT-bench (80 questions), one GPU.
# (topk / num_draft_tokens are not stated in the comment.)
SGLANG_4247_URL = "https://github.com/sgl-project/sglang/pull/4247"
SGLANG_4247: tuple[PublishedRun, ...] = (
    PublishedRun(5, 4.68, 361.70),
    PublishedRun(8, 5.39, 378.57),
)

# vllm-project/vllm PR #16035 ("[V1][Spec Decode] Eagle Model loading"), comment by
# ekagra-ranjan, 2025-04-09: Llama-3-8B-Instruct + lmsys/sglang-EAGLE-LLaMA3-Instruct-8B,
# vLLM V1 offline (examples/offline_inference/eagle.py, max_num_seqs 1), MT-Bench; output
# tok/s as printed ("est. speed ... output"), accept length as printed. GPU not stated.
VLLM_16035_URL = "https://github.com/vllm-project/vllm/pull/16035"
VLLM_16035_VANILLA_TOK_S = 128.64
VLLM_16035: tuple[PublishedRun, ...] = (
    PublishedRun(2, 1.89, 175.49),
    PublishedRun(4, 2.08, 165.65),
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


def rounding_sigma(decimals: int) -> float:
    """Standard deviation of the rounding error of a figure printed with ``decimals``."""
    return 10.0**-decimals / 12**0.5


# --------------------------------------------------------------------------- multi-K acceptance
# Accept lengths (bonus included) measured at several draft lengths with the same model,
# drafter and data: the held-out cases of acceptance extrapolation. None of them is a
# profile of the decay priors (sim/scenario/priors.py).


@dataclass(frozen=True)
class MultiKSeries:
    """Accept lengths of one setup at several num_steps; ``decimals`` as printed (None:
    approximate, ``approx_sigma`` is the error given to it)."""

    name: str
    method: str  # the draft method's decay prior (sim/scenario/priors.py METHODS)
    source: str
    setting: str
    accept_lengths: dict[int, float]
    decimals: int | None = 2
    approx_sigma: float = 0.05
    note: str = ""

    def sigma(self) -> float:
        return rounding_sigma(self.decimals) if self.decimals is not None else self.approx_sigma


# vllm-project/speculators issue #563: Qwen3-8B EAGLE-3 drafters trained on the
# Qwen3-8B-Regenerated-Collection (508k), temperature 0.6, top_p 0.95, top_k 20; accept
# length per k = 1..7, "Qwen3-arch (Llama-arch)" drafters.
SPECULATORS_563_URL = "https://github.com/vllm-project/speculators/issues/563"
SPECULATORS_563: tuple[MultiKSeries, ...] = tuple(
    MultiKSeries(
        f"Qwen3-8B + EAGLE-3 ({arch} drafter), {task}",
        "eagle3",
        SPECULATORS_563_URL,
        "temperature 0.6, top_p 0.95, top_k 20",
        dict(zip(range(1, 8), values, strict=True)),
    )
    for task, arch, values in (
        ("coding", "Qwen3-arch", (1.81, 2.40, 2.80, 3.06, 3.22, 3.30, 3.33)),
        ("coding", "Llama-arch", (1.79, 2.35, 2.71, 2.88, 3.00, 3.06, 3.10)),
        ("math", "Qwen3-arch", (1.83, 2.50, 2.95, 3.28, 3.45, 3.61, 3.68)),
        ("math", "Llama-arch", (1.81, 2.42, 2.87, 3.12, 3.30, 3.42, 3.45)),
        ("summarization", "Qwen3-arch", (1.69, 2.11, 2.35, 2.46, 2.50, 2.52, 2.52)),
        ("summarization", "Llama-arch", (1.67, 2.05, 2.25, 2.33, 2.37, 2.38, 2.39)),
    )
)

MULTI_K: tuple[MultiKSeries, ...] = (
    *SPECULATORS_563,
    # kyuz0/amd-strix-halo-vllm-toolboxes issue #53: Qwen3.6-27B (dense, AWQ INT4) native
    # MTP, vLLM 0.26.0, Radeon 8060S, concurrency 1, greedy, 256 output tokens; "Mean AL"
    # printed as "~1.9", "~2.4", "~2.8".
    MultiKSeries(
        "Qwen3.6-27B native MTP, vLLM, Radeon 8060S",
        "mtp",
        "https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/53",
        "concurrency 1, greedy, 256 output tokens",
        {1: 1.9, 2: 2.4, 3: 2.8},
        decimals=None,
    ),
    # ggml-org/llama.cpp PR #22673 (comment by GloballyUniquePlaceholder): Qwen3.6-35B-A3B
    # MTP, mtp-bench.py (9 prompts); aggregate_accept_rate = accepted / drafted at
    # spec-draft-n-max n, AL = 1 + n x rate (llama.cpp may draft fewer than n: an upper end).
    MultiKSeries(
        "Qwen3.6-35B-A3B MTP, llama.cpp, 3060 Laptop",
        "mtp",
        "https://github.com/ggml-org/llama.cpp/pull/22673",
        "mtp-bench.py, 9 prompts; AL = 1 + n x aggregate_accept_rate",
        {n: 1.0 + n * r for n, r in ((1, 0.8835), (2, 0.815), (3, 0.7127), (4, 0.6421))},
        decimals=3,
        note="derived from accepted/drafted: exact only if every cycle drafts n-max tokens",
    ),
    # sudoingX/qwen38-mtp PR #11: Qwen3.8 NVFP4 MTP, vLLM 0.27.1, RTX PRO 6000 Blackwell
    # Max-Q; acceptance (accepted / drafted) 0.59 at n-max 2, 0.42 at n-max 4.
    MultiKSeries(
        "Qwen3.8 NVFP4 MTP, vLLM, RTX PRO 6000",
        "mtp",
        "https://github.com/sudoingX/qwen38-mtp/pull/11",
        "AL = 1 + n x acceptance",
        {2: 1.0 + 2 * 0.59, 4: 1.0 + 4 * 0.42},
        decimals=2,
        note="derived from accepted/drafted",
    ),
    # ikawrakow/ik_llama.cpp PR #1992: GLM-4.5-Air (IQ1_KT) MTP, one query; acceptance
    # (main branch) 83.8%, 65.6%, 50.0% at n_max 1..3.
    MultiKSeries(
        "GLM-4.5-Air MTP, ik_llama.cpp, one query",
        "mtp",
        "https://github.com/ikawrakow/ik_llama.cpp/pull/1992",
        "main branch; AL = 1 + n x acceptance",
        {n: 1.0 + n * r for n, r in ((1, 0.838), (2, 0.656), (3, 0.500))},
        decimals=3,
        note="a single query: a shape check more than a benchmark",
    ),
)

#: Draft lengths a multi-K case calibrates on (the research notes' protocol: predict
#: AL(K_long) from AL(K <= 2)); every longer num_steps is scored.
MULTI_K_CALIBRATE_UP_TO = 2
