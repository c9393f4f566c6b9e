"""Serving validation: Kimi-K2.5 (MXFP4) on 4x MI355X, vLLM 0.19.0 ROCm, plain and with an
EAGLE-3 drafter (3 tokens, a chain): aggregate output tok/s against a closed loop of C users.

The curve (ROCm/rocm-blogs, the Eagle3 / AMD Quark post of July 2026;
sim/validation/data/serving_curves.toml ``rocmblog_kimi_mi355x``): 1K/1K random prompts
through the chat template, 10 x C prompts a cell, 10 seeds a cell, output tok/s a GPU at
C = 4-64. By the rule pre-registered in docs/studies/case48-kimi-mi355x.md before any scored run:

* calibrated on C = 4 only (the lowest load published): the batch-1 decode step is chosen so
  that the serving cost's plain step at batch 4 is the measured C = 4 time a token; EAGLE-3
  gets no per-cycle overhead beyond the derived passes and one conditional rate (flat) for
  the accept length that the model's batch-4 cycle needs to give the measured per-user
  tok/s at C = 4;
* the model is case 28's Kimi-K2.5 dict with the routed experts at MXFP4 and the attention
  FLOPs of 16 query heads a rank (TP 4); the server 4 GPUs of the MI355X preset, expert
  parallel 4, vLLM chunked prefill at the recipe's 16,384-token budget, host work hidden;
* scored: both arms' aggregate output tok/s at C = 8, 16, 32, 64.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from sim.binding.bound import bind
from sim.binding.serving_cost import serving_cost
from sim.model.closed_forms import alpha_for_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.validation import serving_data as pub
from sim.validation.cases import Case
from sim.validation.kimi_rtx6kpro_cases import KIMI_MODEL
from sim.validation.mi355x_server import mi355x_vllm_scenario
from sim.validation.serving_point import Point, simulate_point
from sim.validation.two_arm_rows import job_line, level_root, row_maker, two_arm_case

__all__ = [
    "CALIBRATED_USERS",
    "EAGLE3",
    "KIMI_MI355X_MODEL",
    "MXFP4_BYTES_PER_PARAM",
    "PLAIN",
    "SCORED",
    "calibrated",
    "measured",
    "mi355x_kimi_cases",
]

PLAIN, EAGLE3 = "no speculation", "EAGLE-3 BF16 draft"
K = pub.ROCMBLOG_KIMI_K
#: The loads scored (C = 4 calibrates).
SCORED = (8, 16, 32, 64)
CALIBRATED_USERS = (4.0,)
#: MXFP4 (OCP MX): 4-bit elements and one 8-bit (E8M0) scale a block of 32.
MXFP4_BYTES_PER_PARAM = (4 + 8 / 32) / 8
#: Attention FLOPs a (query, key) pair a rank: case 28's 8 query heads a rank at TP 8 become
#: 16 at TP 4 (64 heads; MLA's absorbed decode, 2,176 FLOPs a head a layer, 61 layers).
ATTENTION_FLOPS_PER_PAIR_TP4 = KIMI_MODEL["attention_flops_per_pair"] * 8 / pub.ROCMBLOG_KIMI_GPUS
KIMI_MI355X_MODEL: dict[str, Any] = {
    **KIMI_MODEL,
    "name": "Kimi-K2.5-MXFP4",
    "expert_bytes_per_param": MXFP4_BYTES_PER_PARAM,
    "attention_flops_per_pair": ATTENTION_FLOPS_PER_PAIR_TP4,
}
#: Mean context while decoding (tokens): the prompt and half the answer.
CONTEXT = pub.ROCMBLOG_KIMI_INPUT_TOKENS + pub.ROCMBLOG_KIMI_OUTPUT_TOKENS / 2
#: The bracket of the batch-1 decode step's search (ms).
_DECODE_BRACKET_MS = (3.0, 60.0)


def measured(route: str, users: int) -> float:
    """``route``'s aggregate output tok/s at ``users``: the table's tok/s a GPU x the GPUs."""
    return pub.ROCMBLOG_KIMI_TOK_S_PER_GPU[route][users] * pub.ROCMBLOG_KIMI_GPUS


def token_ms(route: str, users: int) -> float:
    """The time a generated token of one user (ms) at ``users``: users / aggregate tok/s
    (TTFT not removed, as case 28 reads its decode point)."""
    return 1000.0 * users / measured(route, users)


def _derived(decode_ms: float) -> Scenario:
    """The scenario with batch-1 decode step ``decode_ms`` (acceptance set later: the flat
    rate 0.5 stands in until the fit below replaces it)."""
    return mi355x_vllm_scenario(
        "kimi-k25-mxfp4-4xmi355x-vllm-eagle3",
        KIMI_MI355X_MODEL,
        gpus=pub.ROCMBLOG_KIMI_GPUS,
        decode_ms=decode_ms,
        context_tokens=CONTEXT,
        num_steps=K,
        alpha=0.5,
        input_tokens=pub.ROCMBLOG_KIMI_INPUT_TOKENS,
        output_tokens=pub.ROCMBLOG_KIMI_OUTPUT_TOKENS,
        # the recipe's --max-num-batched-tokens
        token_budget=pub.ROCMBLOG_KIMI_TOKEN_BUDGET,
        source="sim.validation.mi355x_kimi_cases",
    )


def _step_ms(scenario: Scenario, batch: int, draft: int) -> float:
    """One decode iteration (ms) of ``batch`` requests at the mean context, ``draft`` tokens
    a request (0: plain decoding)."""
    cost = serving_cost(
        bind(scenario),
        kv_bytes_per_token=KIMI_MI355X_MODEL["kv_bytes_per_token"],
        attention_flops_per_pair=KIMI_MI355X_MODEL["attention_flops_per_pair"],
        reference_context_tokens=CONTEXT,
    )
    return float(cost.decode_ms(batch, draft, np.array([batch * CONTEXT]))[0])


def _plain_decode_ms(batch: int, target_ms: float) -> float:
    """The batch-1 decode step (ms) whose derived plain step at ``batch`` is ``target_ms``
    (the step is monotone in it; to 1e-6 ms)."""
    return level_root(
        lambda ms: _step_ms(_derived(ms), batch, 0), target_ms, _DECODE_BRACKET_MS, 1e-6
    )


@functools.cache
def calibrated() -> tuple[Scenario, float, float, float]:
    """(the calibrated scenario, alpha, the accept length needed at C = 4, the model's
    batch-4 speculative cycle in ms): the batch-1 decode step from the plain C = 4 point,
    one flat conditional rate from the EAGLE-3 C = 4 point."""
    users = int(CALIBRATED_USERS[0])
    decode_ms = _plain_decode_ms(users, token_ms(PLAIN, users))
    base = _derived(decode_ms)
    cycle_ms = _step_ms(base, users, K)
    needed_al = cycle_ms / token_ms(EAGLE3, users)
    alpha = alpha_for_accept_length(needed_al, K) if 1.0 < needed_al < K + 1 else None
    if alpha is None:
        raise ValueError(f"a chain of {K} cannot reach the accept length {needed_al:.3f}")
    fitted = with_overrides(base, {"acceptance.alpha": alpha}, source="validation")
    return fitted, alpha, needed_al, cycle_ms


@functools.cache
def simulate(users: int) -> Point:
    """Both arms at a closed loop of ``users`` over 10 x ``users`` requests."""
    return simulate_point(calibrated()[0], users, pub.ROCMBLOG_KIMI_PROMPTS_PER_USER * users)


def _setup_lines() -> tuple[str, ...]:
    scenario, alpha, needed_al, cycle_ms = calibrated()
    return (
        "Kimi-K2.5 MXFP4 on 4x MI355X (a preset from secondary sources: 8 TB/s, 2,500 "
        "TFLOPS BF16), TP 4 with expert parallel 4, vLLM 0.19.0 ROCm: case 28's model dict, "
        f"routed experts at {MXFP4_BYTES_PER_PARAM:.5f} bytes a parameter (MXFP4), attention "
        f"FLOPs of 16 heads a rank ({ATTENTION_FLOPS_PER_PAIR_TP4:.4g} a pair); ASSUMED: the "
        "rest BF16, the MI300X xGMI preset, case 28's drafter size (2.004B), graph capture "
        "as vLLM 2026 on CUDA; chunked prefill at the 16,384-token budget, prefix caching "
        "off, host work hidden in both arms",
        f"calibrated on C = 4 only: batch-1 decode {scenario.timing.decode_ms:.3f} ms, chosen "
        "so that the model's plain step at batch 4 is the measured C = 4 time a token "
        f"({token_ms(PLAIN, 4):.3f} ms, TTFT not removed); EAGLE-3 ({K} tokens): no per-cycle "
        "overhead beyond the derived passes (ASSUMED: no cycle or accept length published), "
        f"one flat conditional rate alpha = {alpha:.4f} for the accept length "
        f"{needed_al:.3f} that the model's {cycle_ms:.2f} ms batch-4 cycle needs to give the "
        f"measured {token_ms(EAGLE3, 4):.3f} ms a token at C = 4",
        job_line(pub.ROCMBLOG_KIMI_INPUT_TOKENS, pub.ROCMBLOG_KIMI_OUTPUT_TOKENS),
    )


def case_kimi_mi355x() -> Case:
    """Kimi-K2.5 + EAGLE-3 (3 tokens) on 4x MI355X, vLLM 0.19.0 ROCm: both arms' aggregate
    tok/s at C = 8-64."""
    points = {users: simulate(users) for users in SCORED}
    return two_arm_case(
        "Kimi-K2.5 (MXFP4) + EAGLE-3 (3 tokens) on 4x AMD MI355X, vLLM 0.19.0 ROCm: aggregate "
        "output tok/s against concurrency, with and without speculation",
        pub.ROCMBLOG_KIMI_URL,
        (
            f"rocm-blogs Kimi-K2.5 MI355X {PLAIN} C=4",
            f"rocm-blogs Kimi-K2.5 MI355X {EAGLE3} C=4",
        ),
        points,
        (4, simulate(4), "calibrated on the step and the cycle, not on the job"),
        row_maker(
            "rocm-blogs Kimi-K2.5 MI355X",
            pub.ROCMBLOG_KIMI_PROMPTS_PER_USER,
            measured,
            CALIBRATED_USERS,
        ),
        measured,
        (PLAIN, EAGLE3),
        _setup_lines(),
    )


def mi355x_kimi_cases() -> tuple[Case, ...]:
    return (case_kimi_mi355x(),)
