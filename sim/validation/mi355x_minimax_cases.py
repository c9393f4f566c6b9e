"""Serving validation: MiniMax-M2.5 (FP8) on 4x MI355X, a vLLM ROCm nightly, plain and with an
EAGLE-3 drafter (3 tokens, a chain): aggregate output tok/s against a closed loop of C users.

The curve (ROCm/rocm-blogs, the Eagle3 / AMD Quark post of July 2026, its second table;
sim/validation/data/serving_curves.toml ``rocmblog_minimax_mi355x``): 1K/1K random prompts,
10 x C prompts a cell (the recipe), 5 seeds a cell, output tok/s a GPU at C = 4-64. By the
rule pre-registered in docs/studies/case49-minimax-mi355x.md (case 49) before any scored run:

* calibrated on C = 4 only, on the simulated job (so each request's prefill is counted once,
  priced by the model): the batch-1 decode step so that the plain job of 4 users gives the
  measured tok/s, then one flat conditional rate (no per-cycle overhead beyond the derived
  passes) so that the EAGLE-3 job gives its measured tok/s;
* the model is the MiniMax-M2 family's shapes (62 layers of full GQA attention, 48 query and 8
  KV heads of 128, 256 experts of FFN 1,536, top 8, vocabulary 200,064) with FP8 weights; the
  server 4 GPUs of the MI355X preset, expert parallel 4, vLLM chunked prefill at its default
  8,192-token budget, FP8 KV cache, host work hidden;
* scored: both arms' aggregate output tok/s at C = 8, 16, 32, 64.
"""

from __future__ import annotations

import functools
from typing import Any

from sim.scenario.schema import Scenario
from sim.validation import serving_data as pub
from sim.validation.cases import Case
from sim.validation.kimi_rtx6kpro_cases import KIMI_MODEL
from sim.validation.mi355x_server import mi355x_vllm_scenario
from sim.validation.serving_point import Point, simulate_point
from sim.validation.two_arm_rows import job_line, level_root, row_maker, two_arm_case

__all__ = [
    "ATTENTION_FLOPS_PER_PAIR",
    "CALIBRATED_USERS",
    "EAGLE3",
    "KV_BYTES_PER_TOKEN",
    "MINIMAX_M25_MODEL",
    "PLAIN",
    "SCORED",
    "calibrated",
    "measured",
    "mi355x_minimax_cases",
]

PLAIN, EAGLE3 = "no speculation", "EAGLE-3 BF16 draft"
K = pub.ROCMBLOG_MINIMAX_K
GPUS = pub.ROCMBLOG_MINIMAX_GPUS
#: The loads scored (C = 4 calibrates).
SCORED = (8, 16, 32, 64)
CALIBRATED_USERS = (4.0,)

# MiniMax-M2 family shapes (MiniMaxM2ForCausalLM; the released checkpoints' config.json as
# third-party code reproduces it, docs/studies/case49-minimax-mi355x.md).
LAYERS, HIDDEN, VOCAB = 62, 3072, 200_064
Q_HEADS, KV_HEADS, HEAD_DIM = 48, 8, 128
EXPERTS, TOP_K, EXPERT_FFN = 256, 8, 1536
#: A SwiGLU expert: gate, up and down projections.
EXPERT_PARAMS = 3 * HIDDEN * EXPERT_FFN
#: A layer's attention projections (q, k, v, o), FP8 in the checkpoint.
ATTENTION_PARAMS = HIDDEN * Q_HEADS * HEAD_DIM * 2 + HIDDEN * KV_HEADS * HEAD_DIM * 2
#: The router gate, left in FP32 by the checkpoint's quantization config.
GATE_PARAMS = HIDDEN * EXPERTS
#: A layer's non-expert weights in BF16-sized parameters (the model's base width): FP8
#: attention at half, the FP32 gate at twice.
LAYER_PARAMS_BF16 = ATTENTION_PARAMS / 2 + GATE_PARAMS * 2
#: The untied LM head (BF16 in the checkpoint).
LM_HEAD_PARAMS = VOCAB * HIDDEN
#: ASSUMED: thoughtworks/MiniMax-M2.5-Eagle3, about 464 MB at BF16 (a third-party note).
DRAFT_PARAMS = 0.232e9
#: FP8 KV (--kv-cache-dtype fp8): K and V of the 2 KV heads a rank (8 / TP 4), 1 byte each.
KV_BYTES_PER_TOKEN = 2.0 * (KV_HEADS / GPUS) * HEAD_DIM * 1 * LAYERS
#: Attention FLOPs a (query, key) pair a rank: 12 query heads a rank, QK and PV 2 x 128 each.
ATTENTION_FLOPS_PER_PAIR = (Q_HEADS / GPUS) * (2 * HEAD_DIM + 2 * HEAD_DIM) * LAYERS
MINIMAX_M25_MODEL: dict[str, Any] = {
    "name": "MiniMax-M2.5",
    "layers": LAYERS,
    "hidden_size": HIDDEN,
    "experts": EXPERTS,
    "experts_per_token": TOP_K,
    # ASSUMED: case 48's count for a MoE layer (counted from SGLang's source for Kimi); only
    # the eager passes beyond the capture limit (prefill chunks) pay it
    "kernels_per_layer": KIMI_MODEL["kernels_per_layer"],
    "layer_params": LAYER_PARAMS_BF16,
    "expert_params": float(EXPERT_PARAMS),
    "lm_head_params": float(LM_HEAD_PARAMS),
    "expert_bytes_per_param": 1.0,
    "draft_params": DRAFT_PARAMS,
    "kv_bytes_per_token": KV_BYTES_PER_TOKEN,
    "attention_flops_per_pair": ATTENTION_FLOPS_PER_PAIR,
}
#: Mean context while decoding (tokens): the prompt and half the answer.
CONTEXT = pub.ROCMBLOG_MINIMAX_INPUT_TOKENS + pub.ROCMBLOG_MINIMAX_OUTPUT_TOKENS / 2
#: The brackets of the two searches: the batch-1 decode step (ms) and the conditional rate.
_DECODE_BRACKET_MS = (3.0, 40.0)
_ALPHA_BRACKET = (0.01, 0.999)
#: The searches stop when the bracket is this narrow (ms; rate).
_DECODE_TOL_MS, _ALPHA_TOL = 1e-4, 1e-5


def measured(route: str, users: int) -> float:
    """``route``'s aggregate output tok/s at ``users``: the table's tok/s a GPU x the GPUs."""
    return pub.ROCMBLOG_MINIMAX_TOK_S_PER_GPU[route][users] * GPUS


def _scenario(decode_ms: float, alpha: float) -> Scenario:
    """The scenario with batch-1 decode step ``decode_ms`` and flat conditional rate
    ``alpha``."""
    return mi355x_vllm_scenario(
        "minimax-m25-fp8-4xmi355x-vllm-eagle3",
        MINIMAX_M25_MODEL,
        gpus=GPUS,
        decode_ms=decode_ms,
        context_tokens=CONTEXT,
        num_steps=K,
        alpha=alpha,
        input_tokens=pub.ROCMBLOG_MINIMAX_INPUT_TOKENS,
        output_tokens=pub.ROCMBLOG_MINIMAX_OUTPUT_TOKENS,
        # a nightly after vLLM 0.19; no --max-num-batched-tokens: vLLM's default 8,192 on a
        # GPU of 70 GiB or more
        token_budget=pub.ROCMBLOG_MINIMAX_TOKEN_BUDGET,
        source="sim.validation.mi355x_minimax_cases",
    )


def _job(scenario: Scenario, users: int) -> Point:
    """Both arms at a closed loop of ``users`` over 10 x ``users`` requests."""
    return simulate_point(scenario, users, pub.ROCMBLOG_MINIMAX_PROMPTS_PER_USER * users)


@functools.cache
def calibrated() -> tuple[Scenario, float, float]:
    """(the calibrated scenario, its batch-1 decode step in ms, alpha): the step from the
    simulated plain job at C = 4, then the flat rate from the simulated EAGLE-3 job at C = 4
    (the serving seed's common random numbers)."""
    users = int(CALIBRATED_USERS[0])
    alpha0 = _ALPHA_BRACKET[0]  # the plain arm does not read the rate
    decode_ms = level_root(
        lambda ms: _job(_scenario(ms, alpha0), users).baseline_tok_s,
        measured(PLAIN, users),
        _DECODE_BRACKET_MS,
        _DECODE_TOL_MS,
    )
    alpha = level_root(
        lambda a: _job(_scenario(decode_ms, a), users).speculative_tok_s,
        measured(EAGLE3, users),
        _ALPHA_BRACKET,
        _ALPHA_TOL,
    )
    return _scenario(decode_ms, alpha), decode_ms, alpha


@functools.cache
def simulate(users: int) -> Point:
    """Both arms of the calibrated scenario at a closed loop of ``users``."""
    return _job(calibrated()[0], users)


def _setup_lines() -> tuple[str, ...]:
    _, decode_ms, alpha = calibrated()
    return (
        "MiniMax-M2.5 (FP8 E4M3, 128 x 128 blocks) on 4x MI355X (a preset from secondary "
        "sources), TP 4 with expert parallel 4, a vLLM ROCm nightly: the MiniMax-M2 family's "
        f"shapes ({LAYERS} layers of full GQA attention, {Q_HEADS}/{KV_HEADS} heads of "
        f"{HEAD_DIM}, {EXPERTS} experts of FFN {EXPERT_FFN}, top {TOP_K}, vocabulary {VOCAB:,}); "
        f"experts 1 byte a parameter, the rest in BF16-sized parameters "
        f"({LAYER_PARAMS_BF16 / 1e6:.2f}M a layer: FP8 attention at half, the FP32 gate at "
        f"twice), FP8 KV ({KV_BYTES_PER_TOKEN:,.0f} bytes a token a rank), attention FLOPs of 12 "
        f"heads a rank ({ATTENTION_FLOPS_PER_PAIR:,.0f} a pair); ASSUMED: the drafter "
        f"{DRAFT_PARAMS / 1e9:.3f}B (about 464 MB at BF16), the MI300X xGMI preset, graph "
        "capture as vLLM 2026 on CUDA; chunked prefill at vLLM's default 8,192-token budget, "
        "prefix caching off, host work hidden in both arms",
        f"calibrated on C = 4 only, on the simulated job (each prefill counted once): batch-1 "
        f"decode {decode_ms:.3f} ms, chosen so that the plain job of 4 users gives the measured "
        f"{measured(PLAIN, 4):.1f} tok/s; EAGLE-3 ({K} tokens): no per-cycle overhead beyond "
        "the derived passes (ASSUMED: no cycle or accept length published), one flat "
        f"conditional rate alpha = {alpha:.4f} so that the EAGLE-3 job gives the measured "
        f"{measured(EAGLE3, 4):.1f} tok/s",
        job_line(pub.ROCMBLOG_MINIMAX_INPUT_TOKENS, pub.ROCMBLOG_MINIMAX_OUTPUT_TOKENS),
    )


def case_minimax_mi355x() -> Case:
    """MiniMax-M2.5 + EAGLE-3 (3 tokens) on 4x MI355X, a vLLM ROCm nightly: both arms'
    aggregate tok/s at C = 8-64."""
    points = {users: simulate(users) for users in SCORED}
    return two_arm_case(
        "MiniMax-M2.5 (FP8) + EAGLE-3 (3 tokens) on 4x AMD MI355X, vLLM ROCm nightly: "
        "aggregate output tok/s against concurrency, with and without speculation",
        pub.ROCMBLOG_MINIMAX_URL,
        (
            f"rocm-blogs MiniMax-M2.5 MI355X {PLAIN} C=4 (the job)",
            f"rocm-blogs MiniMax-M2.5 MI355X {EAGLE3} C=4 (the job)",
        ),
        points,
        (4, simulate(4), "calibrated on the job"),
        row_maker(
            "rocm-blogs MiniMax-M2.5 MI355X",
            pub.ROCMBLOG_MINIMAX_PROMPTS_PER_USER,
            measured,
            CALIBRATED_USERS,
        ),
        measured,
        (PLAIN, EAGLE3),
        _setup_lines(),
    )


def mi355x_minimax_cases() -> tuple[Case, ...]:
    return (case_minimax_mi355x(),)
