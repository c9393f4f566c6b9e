"""Published speculative-decoding figures that specsim's validation report reconstructs.

The figures are in sim/validation/data/batch1_runs.toml (with serving_curves.toml and
eager_pairs.toml for the two read from there) and the cross-run accept lengths in
sim/binding/data/cross_run.toml, each with its source; this module builds the runs from
them. Each figure is used either to calibrate a scenario or to score one, never both
(sim/validation/cases.py enforces the split).
Printed precision matters: a figure printed with d decimals carries a rounding error of
0.5 x 10^-d, whose standard deviation 10^-d / sqrt(12) is the sigma used when fitting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
from sim.validation.data_files import read_table


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One measured run: num_steps k, accept length and tok/s (None when not published)."""

    num_steps: int
    accept_length: float
    tok_s: float | None


_RUNS = read_table("batch1_runs")

# vllm-project/vllm issue #20780: Llama-3.1-8B-Instruct + EAGLE-3, vLLM V1 chain drafting,
# H100, batch 1, MT-Bench: TPOT (ms) per K and without speculation; tok/s = 1000 / TPOT.
VLLM_20780_VANILLA_TPOT_MS: float = _RUNS["vllm_20780"]["vanilla_tpot_ms"]
VLLM_20780_EAGLE3: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, VLLM_20780_AL.accept_lengths[k], 1000.0 / tpot)
    for k, tpot in _RUNS["vllm_20780"]["tpot_ms"]
)

# sgl-project/sglang PR #4247 (comment by chromecast56), with CUDA graphs: Llama-3.1-8B,
# MT-bench, one GPU.
SGLANG_4247: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, SGLANG_4247_AL.accept_lengths[k], tok_s)
    for k, tok_s in _RUNS["sglang_4247"]["tok_s"]
)

# vllm-project/vllm PR #16035 (comment by ekagra-ranjan): Llama-3-8B-Instruct + EAGLE, vLLM
# V1 offline, max_num_seqs 1, MT-Bench; output tok/s as printed. GPU not stated.
VLLM_16035_VANILLA_TOK_S: float = _RUNS["vllm_16035"]["vanilla_tok_s"]
VLLM_16035: tuple[PublishedRun, ...] = tuple(
    PublishedRun(k, VLLM_16035_AL.accept_lengths[k], tok_s)
    for k, tok_s in _RUNS["vllm_16035"]["tok_s"]
)

# vLLM tests/spec_decode test_acceptance_length (docs/reference.md §Published): Llama-3.1-8B +
# EAGLE-3, K = 3, MT-Bench, temperature 0: AL 2.60, cumulative per-position rates
# (sim/validation/data/serving_curves.toml, the serving cases' acceptance too).
_ACCEPTANCE_TEST = read_table("serving_curves")["vllm_eagle3_cumulative"]
VLLM_ACCEPTANCE_TEST_AL: float = _ACCEPTANCE_TEST["accept_length"]
VLLM_ACCEPTANCE_TEST_CUMULATIVE: tuple[float, ...] = tuple(_ACCEPTANCE_TEST["rates"])


def _counters(table: dict[str, Any]) -> tuple[int, int, int, float]:
    """A run's counters as printed: drafts, draft tokens, accepted tokens, accept length."""
    return table["drafts"], table["draft_tokens"], table["accepted"], table["printed_accept_length"]


# vllm-project/vllm PR #26498, "[SpecBench], Padding Enabled (Fixed), K=10" block:
# counters and vLLM's printed "acceptance at token i" (cumulative rates, two decimals).
VLLM_26498_URL: str = _RUNS["vllm_26498"]["source"]
VLLM_26498_DRAFTS, VLLM_26498_DRAFT_TOKENS, VLLM_26498_ACCEPTED, VLLM_26498_PRINTED_AL = _counters(
    _RUNS["vllm_26498"]
)
VLLM_26498_CUMULATIVE: tuple[float, ...] = tuple(_RUNS["vllm_26498"]["cumulative"])

# vllm-project/vllm issue #26191: EAGLE-3 K = 7 counters and the printed accept length.
VLLM_26191_URL: str = _RUNS["vllm_26191"]["source"]
VLLM_26191_DRAFTS, VLLM_26191_DRAFT_TOKENS, VLLM_26191_ACCEPTED, VLLM_26191_PRINTED_AL = _counters(
    _RUNS["vllm_26191"]
)

# The seed question's own figures (/work/shared/seed, docs/reference.md §Seed), not a
# published measurement: they stay here, with the reference answers derived from them.
# Kimi-K2.5, 8 PCIe GPUs, EAGLE-3 k = 2.
SEED_BASELINE_TOK_S = (82.0, 83.0)
SEED_SPEC_TOK_S = (59.0, 61.0)
SEED_ACCEPT_LENGTH = 2.0
SEED_VERIFY_MS = 30.0
SEED_REFERENCE_BREAK_EVEN_AL = 2.46  # 82 tok/s x 30 ms
SEED_REFERENCE_NEEDED_AL = {150.0: 4.5, 200.0: 6.0}  # target x 30 ms


# voipmonitor/rtx6kpro (docs/reference.md §All-reduce): Kimi on 8 PCIe GPUs (RTX PRO 6000 class),
# SGLang EAGLE-3 at 2k context; making the verify pass fully CUDA-graphed raised the
# speculative throughput (the 2k row of sim/validation/data/eager_pairs.toml [voipmonitor]).
# num_steps and accept length not given.
GRAPHED_VERIFY_SOURCE = "voipmonitor/rtx6kpro (docs/reference.md §All-reduce)"
GRAPHED_VERIFY_BEFORE_TOK_S: float
GRAPHED_VERIFY_AFTER_TOK_S: float
GRAPHED_VERIFY_BEFORE_TOK_S, GRAPHED_VERIFY_AFTER_TOK_S = next(
    (before, after)
    for context, before, after in read_table("eager_pairs")["voipmonitor"]["tok_s"]
    if context == 2000
)
