"""Accept lengths of one drafter measured in separate runs at several num_steps.

A within-run per-position profile (sim/binding/priors.py ``PROFILES``) shows how the
conditional rate falls with position inside one run. Runs at different num_steps differ
beyond that: the position-1 rate itself moves with num_steps (vllm-project/vllm PR #48892:
83.59% at K = 1, 75.68% at K = 8, same drafter and data), so accept lengths measured
across runs fall away from a profile fitted to the shortest runs faster or slower than any
within-run profile shows. The series below are that cross-run evidence: each gives one
log rho (sim/binding/priors.py ``cross_run_log_rho``), pooled with the within-run ones
into the shape error past the measured positions.

They are also the validation report's held-out acceptance cases (sim/validation/). There,
every case's prediction and interval use the shape error estimated without the case's
own source (``shape_error(method, leave_out=source)``), so no series informs its own score.

Printed precision matters: a figure printed with d decimals carries a rounding error of
0.5 x 10^-d, whose standard deviation 10^-d / sqrt(12) is the sigma used when fitting it.
"""

from __future__ import annotations

from dataclasses import dataclass


def rounding_sigma(decimals: int) -> float:
    """Standard deviation of the rounding error of a figure printed with ``decimals``."""
    return 10.0**-decimals / 12**0.5


#: Draft lengths a series is fitted on (the research notes' protocol: predict AL(K_long)
#: from AL(K <= 2)); every longer num_steps is compared.
MULTI_K_CALIBRATE_UP_TO = 2


# Accept lengths (bonus included) measured at several draft lengths with the same model,
# drafter and data. None of them is a profile of the decay priors (``PROFILES``).
@dataclass(frozen=True, slots=True)
class MultiKSeries:
    """Accept lengths of one setup at several num_steps; ``decimals`` as printed (None:
    approximate, ``approx_sigma`` is the error given to it)."""

    name: str
    method: str  # the draft method's decay prior (sim/binding/priors.py METHODS)
    source: str
    setting: str
    accept_lengths: dict[int, float]
    decimals: int | None = 2
    approx_sigma: float = 0.05
    note: str = ""

    def sigma(self) -> float:
        return rounding_sigma(self.decimals) if self.decimals is not None else self.approx_sigma

    @property
    def fitted_num_steps(self) -> list[int]:
        """The num_steps a series is fitted on: those <= ``MULTI_K_CALIBRATE_UP_TO``, or
        the shortest when none is that short; every longer one is compared."""
        ks = sorted(self.accept_lengths)
        return [k for k in ks if k <= MULTI_K_CALIBRATE_UP_TO] or ks[:1]


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

# Accept lengths of the validation report's batch-1 cases (their tok/s are in
# sim/validation/data.py), cross-run evidence like the series above.
# vllm-project/vllm issue #20780: Llama-3.1-8B-Instruct + EAGLE-3, vLLM V1, H100, MT-Bench.
VLLM_20780_URL = "https://github.com/vllm-project/vllm/issues/20780"
VLLM_20780_AL = MultiKSeries(
    "Llama-3.1-8B + EAGLE-3, vLLM V1, H100, MT-Bench",
    "eagle3",
    VLLM_20780_URL,
    "batch 1",
    {2: 2.36, 3: 2.79, 4: 3.08, 5: 3.32, 6: 3.46, 7: 3.54},
)
# sgl-project/sglang PR #4247 (comment by chromecast56): Llama-3.1-8B + EAGLE-3, MT-bench.
SGLANG_4247_URL = "https://github.com/sgl-project/sglang/pull/4247"
SGLANG_4247_AL = MultiKSeries(
    "Llama-3.1-8B + EAGLE-3, SGLang, MT-bench",
    "eagle3",
    SGLANG_4247_URL,
    "one GPU, CUDA graphs",
    {5: 4.68, 8: 5.39},
)
# vllm-project/vllm PR #16035 (comment by ekagra-ranjan): Llama-3-8B-Instruct +
# lmsys/sglang-EAGLE-LLaMA3-Instruct-8B, vLLM V1, MT-Bench.
VLLM_16035_URL = "https://github.com/vllm-project/vllm/pull/16035"
VLLM_16035_AL = MultiKSeries(
    "Llama-3-8B + EAGLE-1, vLLM V1, MT-Bench",
    "eagle",
    VLLM_16035_URL,
    "max_num_seqs 1",
    {2: 1.89, 4: 2.08},
)

#: Every cross-run series (the held-out multi-K cases and the batch-1 cases' accept lengths).
CROSS_RUN: tuple[MultiKSeries, ...] = (*MULTI_K, VLLM_20780_AL, SGLANG_4247_AL, VLLM_16035_AL)
