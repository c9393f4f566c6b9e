"""Published concurrency curves of speculative decoding, for the serving validation.

The figures and their sources are in sim/validation/data/serving_curves.toml; each case of
sim/validation/serving_cases.py calibrates on batch 1 and at most one more point of a
curve and scores the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from sim.validation.data_files import curves, read_table

_DATA = read_table("serving_curves")

# Li et al., EAGLE-3 (arXiv 2503.01840 v3), Table 3 (SGLang, 1x H100, LLaMA-Instruct 3.1 8B,
# chain length 3) and Table 5 (vLLM, RTX 3090, chain length 2): speedup over no speculation
# by batch size; Table 4: SGLang's batch-1 tok/s without speculation.
EAGLE3_PAPER_URL: str = _DATA["eagle3_sglang_table3"]["source"]
EAGLE3_SGLANG_BASELINE_BS1_TOK_S: float = _DATA["eagle3_sglang_table3"]["baseline_bs1_tok_s"]
EAGLE3_SGLANG_TABLE3: Mapping[str, Mapping[int, float]] = curves(
    _DATA["eagle3_sglang_table3"]["speedup"]
)
EAGLE3_VLLM_TABLE5: Mapping[str, Mapping[int, float]] = curves(
    _DATA["eagle3_vllm_table5"]["speedup"]
)

# vLLM's test_acceptance_length: Llama-3.1-8B + EAGLE-3, K = 3, MT-Bench, T = 0: cumulative
# per-position acceptance; it gives the EAGLE-3 cases their acceptance.
VLLM_EAGLE3_CUMULATIVE: tuple[float, ...] = tuple(_DATA["vllm_eagle3_cumulative"]["rates"])

# voipmonitor/rtx6kpro: Kimi-K2.5, 8x RTX PRO 6000, TP 8, vLLM, eagle3 "MTP=3" and no MTP:
# aggregate output tok/s against concurrency.
RTX6KPRO_URL: str = _DATA["rtx6kpro"]["source"]
RTX6KPRO_AGGREGATE_TOK_S: Mapping[str, Mapping[int, float]] = curves(
    _DATA["rtx6kpro"]["aggregate_tok_s"]
)

# llm-d: Qwen3-32B on 2x H200 with and without EAGLE-3, a constant-rate ladder 1-16 QPS:
# TPOT, TTFT and request latency p50 per stage.
LLMD_QWEN3_URL: str = _DATA["llmd_qwen3"]["source"]
LLMD_QWEN3_TPOT_P50_MS: Mapping[str, Mapping[int, float]] = curves(
    _DATA["llmd_qwen3"]["tpot_p50_ms"]
)
LLMD_QWEN3_TTFT_P50_S: Mapping[str, Mapping[int, float]] = curves(_DATA["llmd_qwen3"]["ttft_p50_s"])
LLMD_QWEN3_LATENCY_P50_S: Mapping[str, Mapping[int, float]] = curves(
    _DATA["llmd_qwen3"]["latency_p50_s"]
)

# Tencent/AngelSlim #163: Qwen3-30B-A3B on 4x H100 (TP 4), SGLang, MT-bench, plain decoding
# and an EAGLE-3 tree (4 steps, topk 4, 16 draft tokens): output tok/s and the tree's accept
# length by batch size.
ANGELSLIM_URL: str = _DATA["angelslim_qwen3_30b"]["source"]
ANGELSLIM_TOK_S: Mapping[str, Mapping[int, float]] = curves(
    _DATA["angelslim_qwen3_30b"]["output_tok_s"]
)
ANGELSLIM_AL: Mapping[int, float] = curves(_DATA["angelslim_qwen3_30b"]["accept_length"])[
    "tree 4/4/16"
]
#: The plain rows' job wall time (s): at batch 1, x the throughput, the job's output tokens.
ANGELSLIM_LATENCY_S: Mapping[int, float] = curves(_DATA["angelslim_qwen3_30b"]["latency_s"])[
    "baseline"
]

# sgl-project/SpecForge #339: Qwen3-30B-A3B on 2x H100 (TP 2), SGLang, MT-bench, plain
# decoding at batch 1-64 and an EAGLE-3 chain of 3 at batch 1 and 4.
SPECFORGE_URL: str = _DATA["specforge_qwen3_30b"]["source"]
SPECFORGE_TOK_S: Mapping[str, Mapping[int, float]] = curves(
    _DATA["specforge_qwen3_30b"]["output_tok_s"]
)
SPECFORGE_AL: Mapping[int, float] = curves(_DATA["specforge_qwen3_30b"]["accept_length"])["chain 3"]

# LMSYS blog (AMD, 2025-09-02): DeepSeek-V3 on 8x MI300X, SGLang v0.4.10.post1, with and
# without MTP (NEXTN, 2 steps, topk 1, 3 draft tokens): mean end-to-end latency (ms) against
# max concurrency on the random dataset.
AMD_MTP_URL: str = _DATA["amd_mtp_dsv3"]["source"]
AMD_MTP_E2E_MS: Mapping[str, Mapping[int, float]] = curves(_DATA["amd_mtp_dsv3"]["e2e_latency_ms"])
# LMSYS blog (Eigen AI, 2025-07-17): DeepSeek V3 MTP on SGLang with 3 draft tokens, topk 1:
# the accept length it printed (another server and workload).
SGLANG_MTP_BLOG_URL: str = _DATA["sglang_mtp_blog"]["source"]
SGLANG_MTP_AL_3_TOKENS: float = _DATA["sglang_mtp_blog"]["accept_length_3_draft_tokens"]

# vllm-project/speculators (2026-10-06): Qwen3.8-27B on one B200, vLLM 0.30.1rc1, plain and
# with its MTP layer (2 speculative tokens), GuideLLM closed loop of N streams, by subset
# (HumanEval, math_reasoning): aggregate output tok/s, mean ITL and the MTP arm's accept
# length by N; the calibration load's (N = 1) mean prompt and output lengths and completed
# requests.
SPECULATORS_QWEN38_URL: str = _DATA["speculators_qwen38_27b"]["source"]
SPECULATORS_QWEN38_SUBSETS: tuple[str, ...] = ("HumanEval", "math_reasoning")


def _qwen38(field: str) -> Mapping[str, Mapping[str, Mapping[int, float]]]:
    return {
        subset: curves(_DATA["speculators_qwen38_27b"][subset][field])
        for subset in SPECULATORS_QWEN38_SUBSETS
    }


SPECULATORS_QWEN38_TOK_S = _qwen38("aggregate_tok_s")
SPECULATORS_QWEN38_ITL_MS = _qwen38("mean_itl_ms")
SPECULATORS_QWEN38_AL = _qwen38("accept_length")
SPECULATORS_QWEN38_PROMPT_TOKENS = _qwen38("mean_prompt_tokens")
SPECULATORS_QWEN38_OUTPUT_TOKENS = _qwen38("mean_output_tokens")
SPECULATORS_QWEN38_COMPLETED = _qwen38("completed_requests")

# david-xinyuwei/david-share (run qwen38-quality-20260906): Qwen3.8-27B on one H100 NVL, vLLM
# 0.28.0, plain, MTP (7 tokens) and DFlash 2 (7 tokens), a closed loop of C = 1, 4, 8
# in-flight requests over one job of 64 tasks, three seeds a point: each seed's output tok/s,
# group wall time and acceptance rate by C; the median P50 TPOT by C.
_DAVID = _DATA["davidshare_qwen38_h100nvl"]
DAVIDSHARE_QWEN38_URL: str = _DAVID["source"]
DAVIDSHARE_QWEN38_SEEDS: tuple[str, ...] = tuple(_DAVID["output_tok_s"])
DAVIDSHARE_QWEN38_REQUESTS: int = _DAVID["requests_per_group"]
DAVIDSHARE_QWEN38_PROMPT_TOKENS: int = _DAVID["prompt_tokens_per_group"]
DAVIDSHARE_QWEN38_MAX_TOKENS: int = _DAVID["max_completion_tokens"]
#: The one group whose per-request completion spread was read (plain, C = 1, first seed).
DAVIDSHARE_QWEN38_SPREAD_READ: tuple[float, float] = (
    _DAVID["completion_tokens_mean_read"],
    _DAVID["completion_tokens_sd_read"],
)
DAVIDSHARE_QWEN38_P50_READ: float = _DAVID["completion_tokens_p50_read"]


def _by_seed(field: str) -> Mapping[str, Mapping[str, Mapping[int, float]]]:
    """``field`` by seed, route and C."""
    return {seed: curves(_DAVID[field][seed]) for seed in DAVIDSHARE_QWEN38_SEEDS}


DAVIDSHARE_QWEN38_TOK_S = _by_seed("output_tok_s")
DAVIDSHARE_QWEN38_WALL_S = _by_seed("group_wall_s")
DAVIDSHARE_QWEN38_ACCEPTANCE = _by_seed("acceptance_rate")
DAVIDSHARE_QWEN38_TPOT_MS: Mapping[str, Mapping[int, float]] = curves(_DAVID["tpot_ms"])

# david-xinyuwei/david-share (run dflash-quality-20260905): Qwen3.6-27B on one H100 NVL, vLLM
# 0.21.0, plain and MTP (5 tokens), a closed loop of C = 1, 4, 8 in-flight requests over one
# job of 64 tasks, one run a point: each group's completion tokens and wall time by C; the
# streaming group's median TTFT (code, math); the MTP route's acceptance counters over its
# whole process; the plain C = 1 group's 64 answer lengths; two prompts' lengths.
_DAVID36 = _DATA["davidshare_qwen36_h100nvl"]
DAVIDSHARE_QWEN36_URL: str = _DAVID36["source"]
DAVIDSHARE_QWEN36_REQUESTS: int = _DAVID36["requests_per_group"]
DAVIDSHARE_QWEN36_MAX_TOKENS: tuple[int, ...] = tuple(_DAVID36["max_tokens"])
DAVIDSHARE_QWEN36_TOKENS: Mapping[str, Mapping[int, float]] = curves(_DAVID36["completion_tokens"])
DAVIDSHARE_QWEN36_WALL_S: Mapping[str, Mapping[int, float]] = curves(_DAVID36["wall_s"])
DAVIDSHARE_QWEN36_TTFT_MS: Mapping[str, tuple[float, ...]] = {
    route: tuple(v) for route, v in _DAVID36["ttft_streaming_ms"].items()
}
DAVIDSHARE_QWEN36_MTP_ACCEPTED: int = _DAVID36["mtp_accepted_tokens"]
DAVIDSHARE_QWEN36_MTP_DRAFTS: int = _DAVID36["mtp_draft_iterations"]
DAVIDSHARE_QWEN36_PROMPTS_READ: tuple[int, ...] = tuple(_DAVID36["prompt_tokens_read"])
DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS: tuple[int, ...] = tuple(_DAVID36["plain_c1_answers"])
#: Each group's 64 answer lengths in the order sent, by route and C (the plain C = 1
#: group's: ``DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS``).
DAVIDSHARE_QWEN36_ANSWERS: Mapping[str, Mapping[int, tuple[int, ...]]] = {
    route: {
        **({1: DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS} if route == "no speculation" else {}),
        **{int(users): tuple(v) for users, v in by_c.items()},
    }
    for route, by_c in _DAVID36["answers"].items()
}

# IneshReddy249/speculative-decoding-moe-benchmark (raw sglang.bench_serving outputs at
# f598e234): GLM-4.7-Flash BF16 on one H100 PCIe, SGLang, plain, MTP (1 step, SpecV2) and
# EAGLE-3 (a separate head, 3 steps, SpecV2), a job of 64 ShareGPT prompts of 256 output
# tokens at max concurrency 1-32: output tok/s, mean TPOT, mean TTFT and accept length by C.
_GLM = _DATA["glm47flash_mtp_h100pcie"]
GLM47FLASH_URL: str = _GLM["source"]
GLM47FLASH_REQUESTS: int = _GLM["requests"]
GLM47FLASH_INPUT_TOKENS_TOTAL: int = _GLM["input_tokens_total"]
GLM47FLASH_OUTPUT_TOKENS: int = _GLM["output_tokens_per_request"]
GLM47FLASH_SPEC_MAX_RUNNING: int = _GLM["max_running_requests_speculative"]
GLM47FLASH_TOK_S: Mapping[str, Mapping[int, float]] = curves(_GLM["output_tok_s"])
GLM47FLASH_TPOT_MS: Mapping[str, Mapping[int, float]] = curves(_GLM["tpot_ms"])
GLM47FLASH_AL: Mapping[str, Mapping[int, float]] = curves(_GLM["accept_length"])
GLM47FLASH_TTFT_MS: Mapping[str, Mapping[int, float]] = curves(_GLM["ttft_ms"])

# ROCm/rocm-blogs (the Eagle3 / AMD Quark post, 2026-07): Kimi-K2.5 MXFP4 on 4x MI355X, vLLM
# 0.19.0 ROCm, plain and EAGLE-3 (BF16 draft, 3 tokens), 1K/1K random prompts, a closed loop of
# C users over 10 x C prompts, 10 seeds a cell: output tok/s a GPU by C.
_KIMI355 = _DATA["rocmblog_kimi_mi355x"]
ROCMBLOG_KIMI_URL: str = _KIMI355["source"]
ROCMBLOG_KIMI_GPUS: int = _KIMI355["gpus"]
ROCMBLOG_KIMI_INPUT_TOKENS: int = _KIMI355["input_tokens"]
ROCMBLOG_KIMI_OUTPUT_TOKENS: int = _KIMI355["output_tokens"]
ROCMBLOG_KIMI_PROMPTS_PER_USER: int = _KIMI355["prompts_per_user"]
ROCMBLOG_KIMI_TOKEN_BUDGET: int = _KIMI355["token_budget"]
ROCMBLOG_KIMI_K: int = _KIMI355["num_speculative_tokens"]
ROCMBLOG_KIMI_TOK_S_PER_GPU: Mapping[str, Mapping[int, float]] = curves(_KIMI355["tok_s_per_gpu"])

# The same post's second table: MiniMax-M2.5 (FP8) on 4x MI355X, a vLLM ROCm nightly, plain and
# EAGLE-3 (BF16 draft, 3 tokens), 1K/1K random prompts, 10 x C prompts (the recipe), 5 seeds a
# cell: output tok/s a GPU by C.
_MINIMAX355 = _DATA["rocmblog_minimax_mi355x"]
ROCMBLOG_MINIMAX_URL: str = _MINIMAX355["source"]
ROCMBLOG_MINIMAX_GPUS: int = _MINIMAX355["gpus"]
ROCMBLOG_MINIMAX_INPUT_TOKENS: int = _MINIMAX355["input_tokens"]
ROCMBLOG_MINIMAX_OUTPUT_TOKENS: int = _MINIMAX355["output_tokens"]
ROCMBLOG_MINIMAX_PROMPTS_PER_USER: int = _MINIMAX355["prompts_per_user"]
ROCMBLOG_MINIMAX_TOKEN_BUDGET: int = _MINIMAX355["token_budget"]
ROCMBLOG_MINIMAX_K: int = _MINIMAX355["num_speculative_tokens"]
ROCMBLOG_MINIMAX_TOK_S_PER_GPU: Mapping[str, Mapping[int, float]] = curves(
    _MINIMAX355["tok_s_per_gpu"]
)

# Avarok-Cybersecurity/atlas bench/ladder38: Qwen3.8-27B (NVFP4) on one GB10, vLLM 0.27.1, plain
# (BF16 KV) and with its MTP layer (3 tokens, FP8 KV), one batch of C requests a rep (~200
# prompt tokens, 1,024 answer tokens), mean of 3 reps: aggregate output tok/s by C.
_ATLAS_GB10 = _DATA["atlas_qwen38_gb10"]
ATLAS_GB10_URL: str = _ATLAS_GB10["source"]
ATLAS_GB10_GPUS: int = _ATLAS_GB10["gpus"]
ATLAS_GB10_INPUT_TOKENS: int = _ATLAS_GB10["input_tokens"]
ATLAS_GB10_OUTPUT_TOKENS: int = _ATLAS_GB10["output_tokens"]
ATLAS_GB10_MAX_RUNNING: int = _ATLAS_GB10["max_running_requests"]
ATLAS_GB10_TOKEN_BUDGET: int = _ATLAS_GB10["token_budget"]
ATLAS_GB10_MEMORY_UTILIZATION: float = _ATLAS_GB10["gpu_memory_utilization"]
ATLAS_GB10_REPORTED_MEMORY_GIB: float = _ATLAS_GB10["reported_memory_gib"]
ATLAS_GB10_K: int = _ATLAS_GB10["num_speculative_tokens"]
ATLAS_GB10_TOK_S: Mapping[str, Mapping[int, float]] = curves(_ATLAS_GB10["aggregate_tok_s"])

# gpustack's performance lab: Qwen3-8B-FP8 on one H100 SXM, SGLang v0.5.3.post3, an EAGLE-3 tree
# (4 steps, topk 4, 16 draft tokens) at max concurrency 1-8 over 100 ShareGPT requests; at C = 4
# a same-server sweep of plain decoding, six trees and a chain of 2.
_GPUSTACK = _DATA["gpustack_qwen3_8b_h100"]
GPUSTACK_URL: str = _GPUSTACK["source"]
GPUSTACK_REQUESTS: int = _GPUSTACK["requests"]
GPUSTACK_INPUT_TOKENS: float = _GPUSTACK["input_tokens_total"] / GPUSTACK_REQUESTS
GPUSTACK_OUTPUT_TOKENS: float = _GPUSTACK["output_tokens_total"] / GPUSTACK_REQUESTS
GPUSTACK_TREE: tuple[int, int, int] = (
    int(_GPUSTACK["tree"][0]),
    int(_GPUSTACK["tree"][1]),
    int(_GPUSTACK["tree"][2]),
)
GPUSTACK_TREE_TOK_S: Mapping[int, float] = curves(_GPUSTACK["tree_output_tok_s"])["tree 4/4/16"]
GPUSTACK_TREE_TPOT_MS: Mapping[int, float] = curves(_GPUSTACK["tree_mean_tpot_ms"])["tree 4/4/16"]
GPUSTACK_TREE_ITL_MS: Mapping[int, float] = curves(_GPUSTACK["tree_mean_itl_ms"])["tree 4/4/16"]
#: C = 4: label -> (num_steps, topk, num_draft_tokens, output tok/s, mean TPOT ms, mean ITL ms);
#: the plain row's draft is (0, 0, 0).
GPUSTACK_SWEEP_C4: Mapping[str, tuple[int, int, int, float, float, float]] = {
    label: (int(r[0]), int(r[1]), int(r[2]), float(r[3]), float(r[4]), float(r[5]))
    for label, r in _GPUSTACK["sweep_c4"].items()
}

# gpustack's performance lab: Qwen3.5-9B (BF16, hybrid) on one H100 SXM, vLLM v0.17.1, plain and
# with its MTP layer (1 token), guidellm at a constant 1-16 requests a second over 1,000
# ShareGPT requests: mean latency (s) and mean TTFT (ms) by rate.
_GPUSTACK95 = _DATA["gpustack_qwen35_9b_h100"]
GPUSTACK_QWEN35_URL: str = _GPUSTACK95["source"]
GPUSTACK_QWEN35_REQUESTS: int = _GPUSTACK95["requests"]
GPUSTACK_QWEN35_INPUT_TOKENS: float = _GPUSTACK95["input_tokens_total"] / GPUSTACK_QWEN35_REQUESTS
GPUSTACK_QWEN35_OUTPUT_TOKENS: float = _GPUSTACK95["output_tokens_total"] / GPUSTACK_QWEN35_REQUESTS
GPUSTACK_QWEN35_K: int = _GPUSTACK95["num_speculative_tokens"]
GPUSTACK_QWEN35_MTP_ALONE_R8_S: float = _GPUSTACK95["mtp_alone_r8_mean_latency_s"]
GPUSTACK_QWEN35_LATENCY_S: Mapping[str, Mapping[int, float]] = curves(_GPUSTACK95["mean_latency_s"])
GPUSTACK_QWEN35_TTFT_MS: Mapping[str, Mapping[int, float]] = curves(_GPUSTACK95["mean_ttft_ms"])
