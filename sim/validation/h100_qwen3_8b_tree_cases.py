"""Serving validation: Qwen3-8B-FP8 + an EAGLE-3 tree (4 steps, topk 4, 16 draft tokens) on
one H100 SXM, SGLang v0.5.3.post3: output tok/s of a 100-request job against max concurrency,
and at C = 4 the same server's plain decoding, five more trees and a chain of 2 (case 51).

The curve (gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md;
sim/validation/data/serving_curves.toml ``gpustack_qwen3_8b_h100``): ``vllm bench serve`` over
100 ShareGPT prompts at max concurrency C = 1, 2, 4, 8 (23,260 input and 22,061 output tokens
in every run). By the rule pre-registered in docs/studies/case51-tree-h100.md (case 51) before any
scored run:

* calibrated on the tree's C = 1 job only (no plain or chain run exists at C = 1): its accept
  length DERIVED as mean ITL / mean TPOT (``vllm bench serve`` times one ITL a streamed chunk,
  SGLang streams a cycle as one chunk), one flat top-1 rate under the tree with the ranks below
  by ``PRIOR``'s residual shares, then the batch-1 decode step (the cycle's passes derived from
  it, no per-cycle overhead beyond them) so that the simulated job gives the measured tok/s;
* the model from Qwen3-8B's config.json with FP8 decoder weights, an EAGLE-3 head of one layer,
  on the H100 (SXM) preset, SGLang prefill-first with its overlap scheduler off for EAGLE;
* scored: the tree's tok/s at C = 2, 4, 8; at C = 4 the plain and chain levels, both gains over
  plain, and each of the sweep's six trees against the chain (the sign of tree / chain - 1).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import optimize

from sim.binding.bound import bind
from sim.model.tree.metrics import from_tree_accept_length
from sim.model.tree.presets import rank_profile
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.setup import serving_setup
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED, Point, simulate_point
from sim.validation.tree_cases import PRIOR
from sim.validation.two_arm_rows import aggregate_row, level_root, rounding_free

__all__ = [
    "CALIBRATED_USERS",
    "DRAFT_PARAMS",
    "LAYER_PARAMS_BF16",
    "SCORED",
    "TREE",
    "accept_length_c1",
    "calibrated",
    "case_qwen3_8b_tree",
    "h100_qwen3_8b_tree_cases",
    "measured",
    "rows",
    "scenario",
    "simulate",
    "sweep",
    "top1_rate",
]

LABEL = "gpustack Qwen3-8B-FP8 H100"
PLAIN, TREE, CHAIN = "plain", "tree 4/4/16", "chain 2"
#: The sweep's own run of the 4/4/16 tree at C = 4.
SWEPT_TREE = "tree 4/4/16 (sweep)"
#: The loads scored (C = 1 calibrates) and the load of the same-server sweep.
SCORED = (2, 4, 8)
SWEEP_USERS = 4
CALIBRATED_USERS = (1.0,)
#: Qwen3-8B's config.json: 36 layers of 4,096 hidden, 32 query and 8 KV heads of 128, MLP
#: 12,288, vocabulary 151,936, an untied LM head.
LAYERS, HIDDEN, KV_HEADS, HEAD_DIM, MLP, VOCAB = 36, 4096, 8, 128, 12_288, 151_936
#: q and o 4,096 x 4,096, k and v 4,096 x 1,024, the MLP 3 x 4,096 x 12,288: 192.94M a layer.
LAYER_PARAMS = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV_HEADS * HEAD_DIM + 3 * HIDDEN * MLP
#: Block-wise FP8 (ASSUMED 128 x 128 blocks, one FP32 scale a block; the checkpoint's config was
#: not read): bytes a parameter.
FP8_BYTES_PER_PARAM = 1 + 4 / (128 * 128)
#: The decoder's weights in BF16-sized parameters: a roofline at the BF16 peak over them is the
#: FP8 peak (2x BF16's) over all of them (case 50's rule for NVFP4).
LAYER_PARAMS_BF16 = LAYER_PARAMS * FP8_BYTES_PER_PARAM / 2
#: The drafter, ASSUMED (Tengyunw/qwen3_8b_eagle3's config.json not read): case 46's EAGLE-3
#: head at the target's width: the 3 x 4,096 -> 4,096 fusion, one decoder layer whose q, k, v
#: read the 2 x 4,096 input (embedding and feature), the target's MLP shape, a 32,000-token
#: head and four norms; BF16.
DRAFT_PARAMS = (
    3 * HIDDEN * HIDDEN
    + 2 * HIDDEN * HIDDEN
    + 2 * 2 * HIDDEN * KV_HEADS * HEAD_DIM
    + HIDDEN * HIDDEN
    + 3 * HIDDEN * MLP
    + HIDDEN * 32_000
    + 4 * HIDDEN
)
MODEL: dict[str, Any] = {
    "name": "Qwen3-8B-FP8",
    "layers": LAYERS,
    "hidden_size": HIDDEN,
    "layer_params": LAYER_PARAMS_BF16,
    # ASSUMED: Llama-3.1-8B's 11 kernels a layer plus Qwen3's q and k norms; only the eager
    # prefill reads it (every decode, draft and verify pass here is graphed)
    "kernels_per_layer": 13,
    "lm_head_params": float(VOCAB * HIDDEN),
    "draft_params": float(DRAFT_PARAMS),
    # BF16 KV (SGLang's --kv-cache-dtype auto): 36 x 8 x 128 x (K, V) x 2 bytes a token
    "kv_bytes_per_token": float(LAYERS * KV_HEADS * HEAD_DIM * 2 * 2),
    "draft_kv_bytes_per_token": float(KV_HEADS * HEAD_DIM * 2 * 2),
    # 32 query heads x 128 x (QK, PV) x 2 FLOPs x 36 layers a (query, key) pair
    "attention_flops_per_pair": float(32 * HEAD_DIM * 2 * 2 * LAYERS),
}
#: The job's lengths: the run's totals over its 100 requests, rounded (ASSUMED every request at
#: the means; the ShareGPT sample's own lengths are not published).
INPUT_TOKENS = round(pub.GPUSTACK_INPUT_TOKENS)
OUTPUT_TOKENS = round(pub.GPUSTACK_OUTPUT_TOKENS)
CONTEXT = INPUT_TOKENS + OUTPUT_TOKENS / 2
_DECODE_BRACKET_MS, _DECODE_TOL_MS = (0.5, 30.0), 1e-4


def measured(label: str, users: int) -> float:
    """Measured output tok/s: the tree series' at C = ``users`` (``TREE``), or the C = 4
    sweep's row ``label`` (its 4/4/16 row ``SWEPT_TREE``, a second run of the series' C = 4)."""
    if label == TREE:
        return pub.GPUSTACK_TREE_TOK_S[users]
    if users != SWEEP_USERS:
        raise KeyError((label, users))
    return pub.GPUSTACK_SWEEP_C4[TREE if label == SWEPT_TREE else label][3]


def accept_length_c1() -> float:
    """The tree's accept length at C = 1, DERIVED: mean ITL (one chunk a cycle) / mean TPOT."""
    return pub.GPUSTACK_TREE_ITL_MS[1] / pub.GPUSTACK_TREE_TPOT_MS[1]


def scenario(decode_ms: float, top1: float, draft: tuple[int, int, int]) -> Scenario:
    """The server with batch-1 decode step ``decode_ms``, drafting ``draft`` (num_steps, topk,
    num_draft_tokens; topk 1 a chain) at the flat top-1 rate ``top1`` (a tree's ranks below by
    ``PRIOR``)."""
    steps, topk, tokens = draft
    tree = topk > 1
    speculation: dict[str, Any] = {"num_steps": steps}
    acceptance: dict[str, Any] = {"alpha": top1}
    if tree:
        speculation |= {"topk": topk, "num_draft_tokens": tokens}
        acceptance["rank_profile"] = PRIOR
    return scenario_from_dict(
        {
            "name": f"qwen3-8b-fp8-1xh100-sglang-eagle3-{steps}-{topk}-{tokens}",
            "model": MODEL,
            "server": {"engine": "sglang"},
            # one GPU: no collective is priced, the interconnect is a placeholder
            "hardware": {"gpus": 1, "interconnect": "nvlink4", "gpu": "H100"},
            "timing": {
                "decode_ms": decode_ms,
                "verify_cuda_graph": True,
                "context_tokens": CONTEXT,
            },
            "speculation": speculation,
            "acceptance": acceptance,
            "workload": {
                "lengths": "fixed",
                "input_tokens": INPUT_TOKENS,
                "output_tokens": OUTPUT_TOKENS,
            },
            # SGLang v0.5.3.post3: prefills first; its overlap scheduler hides host work in
            # plain decoding only (off with EAGLE)
            "serving": {"batching": "prefill_first", "host_overlap": "baseline"},
        },
        source="sim.validation.h100_qwen3_8b_tree_cases",
    )


def _tree_accept_length(top1: float) -> float:
    """E[L] of the 4/4/16 tree the serving plan builds at top-1 rate ``top1``."""
    bound = bind(scenario(10.0, top1, pub.GPUSTACK_TREE))
    plan = serving_setup(bound, source="validation").plan
    return plan.tree_acceptance(bound.drafting.draft).mean_accept_length()


@functools.cache
def top1_rate() -> float:
    """The flat top-1 rate whose 4/4/16 tree (``PRIOR``'s ranks) has the C = 1 accept length;
    brentq to 1e-6 around the closed form's value."""
    steps, topk, tokens = pub.GPUSTACK_TREE
    al = accept_length_c1()
    shares = tuple(rank_profile(PRIOR).shares()[: topk - 1])
    start = from_tree_accept_length(al, steps, topk, tokens, shares, PRIOR).top1
    return float(
        optimize.brentq(
            lambda x: _tree_accept_length(x) - al, 0.8 * start, min(1.2 * start, 0.999), xtol=1e-6
        )
    )


def _job(sc: Scenario, users: int) -> Point:
    """Both policies of ``sc`` on the job: a closed loop of ``users`` over 100 requests."""
    return simulate_point(sc, users, pub.GPUSTACK_REQUESTS)


@functools.cache
def calibrated() -> tuple[float, float]:
    """(the batch-1 decode step in ms, the top-1 rate): the rate from the C = 1 accept length,
    then the step so that the simulated tree job at C = 1 gives the measured tok/s."""
    top1 = top1_rate()
    decode_ms = level_root(
        lambda ms: _job(scenario(ms, top1, pub.GPUSTACK_TREE), 1).speculative_tok_s,
        measured(TREE, 1),
        _DECODE_BRACKET_MS,
        _DECODE_TOL_MS,
    )
    return decode_ms, top1


@functools.cache
def simulate(users: int) -> Point:
    """The tree server and its plain arm at C = ``users``."""
    decode_ms, top1 = calibrated()
    return _job(scenario(decode_ms, top1, pub.GPUSTACK_TREE), users)


@functools.cache
def sweep() -> dict[str, Point]:
    """Every speculative row of the C = 4 sweep, each on its own scenario (same step, rate)."""
    decode_ms, top1 = calibrated()
    return {
        label: _job(scenario(decode_ms, top1, row[:3]), SWEEP_USERS)
        for label, row in pub.GPUSTACK_SWEEP_C4.items()
        if label != PLAIN
    }


def _level(route: str, users: int, predicted: float, sd: float, side: str) -> Row:
    """A level; plain decoding's carries no calibrated load (the model-error fit counts a
    figure's distance from the loads that calibrate its own arm, and no plain run of this
    server calibrates anything: its step is the tree's C = 1 fit), so it is scored but
    not in that fit."""
    return aggregate_row(
        f"{LABEL} {route} C={users}",
        users,
        pub.GPUSTACK_REQUESTS,
        measured(route, users),
        predicted,
        sd,
        side,
        () if route == PLAIN else CALIBRATED_USERS,
    )


def _ratio(
    quantity: str,
    figure: str,
    measured_value: float,
    predicted: float,
    sd: float,
    calibrated_loads: tuple[float, ...] = CALIBRATED_USERS,
) -> Row:
    return Row(
        quantity,
        figure,
        f"closed loop of {SWEEP_USERS} users, {pub.GPUSTACK_REQUESTS} requests",
        measured_value,
        predicted,
        sd,
        load=SWEEP_USERS,
        calibrated_loads=calibrated_loads,
        side="gain",
    )


def _quotient_sd(a: float, a_sd: float, b: float, b_sd: float) -> float:
    """The standard error of a / b from two independent simulations' standard errors."""
    return float(a / b * ((a_sd / a) ** 2 + (b_sd / b) ** 2) ** 0.5)


def _spec_sd(p: Point) -> float:
    """A speculative level's standard error: the paired gain's times the plain level."""
    return p.speedup_sd * p.baseline_tok_s


def _swept(label: str) -> str:
    """The measured-figure label of the sweep's row ``label``."""
    return SWEPT_TREE if label == TREE else label


def rows() -> tuple[tuple[Row, ...], tuple[str, ...]]:
    """The scored rows and the sweep's tree / chain lines."""
    out: list[Row] = []
    for users in SCORED:
        p = simulate(users)
        out.append(_level(TREE, users, p.speculative_tok_s, _spec_sd(p), "speculative"))
    c4, arms = simulate(SWEEP_USERS), sweep()
    chain = arms[CHAIN]
    out.append(_level(PLAIN, SWEEP_USERS, c4.baseline_tok_s, rounding_free(c4), "plain"))
    out.append(_level(CHAIN, SWEEP_USERS, chain.speculative_tok_s, _spec_sd(chain), "speculative"))
    plain_measured = measured(PLAIN, SWEEP_USERS)
    for label in (TREE, CHAIN):
        p = arms[label]
        out.append(
            _ratio(
                "speedup (aggregate tok/s)",
                f"{LABEL} {label} / plain C={SWEEP_USERS}",
                measured(_swept(label), SWEEP_USERS) / plain_measured,
                p.speedup,
                p.speedup_sd,
                (),  # over the uncalibrated plain arm: scored, not in the model-error fit
            )
        )
    lines, right = [], 0
    chain_measured = measured(CHAIN, SWEEP_USERS)
    trees = [label for label in arms if label != CHAIN]
    for label in trees:
        p = arms[label]
        m = measured(_swept(label), SWEEP_USERS) / chain_measured
        s = p.speculative_tok_s / chain.speculative_tok_s
        sd = _quotient_sd(
            p.speculative_tok_s, _spec_sd(p), chain.speculative_tok_s, _spec_sd(chain)
        )
        out.append(
            _ratio("tree / chain (aggregate tok/s)", f"{LABEL} {label} / chain 2 C=4", m, s, sd)
        )
        same = (m > 1) == (s > 1)
        right += same
        lines.append(
            f"{label} / chain 2: measured {m:.3f}, specsim {s:.3f} "
            f"({'right' if same else 'wrong'} side)"
        )
    lines.append(f"tree against chain at C = 4: the side right at {right} of {len(trees)} rows")
    return tuple(out), tuple(lines)


def _batch1_cycle_ms() -> float:
    """The calibrated tree's batch-1 cycle (ms) at the job's mean context, as the serving
    plan prices it."""
    decode_ms, top1 = calibrated()
    bound = bind(scenario(decode_ms, top1, pub.GPUSTACK_TREE))
    plan = serving_setup(bound, source="validation").plan
    return float(plan.cost.decode_ms(1, bound.drafting.draft, np.array([CONTEXT]))[0])


def _setup_lines() -> tuple[str, ...]:
    decode_ms, top1 = calibrated()
    al = accept_length_c1()
    return (
        "Qwen3-8B (config.json: 36 layers of 4,096, 32 query and 8 KV heads of 128, MLP 12,288, "
        f"an untied 151,936-token head) with FP8 decoder weights ({FP8_BYTES_PER_PARAM:.5f} bytes "
        f"a parameter, ASSUMED block-wise 128 x 128: {LAYER_PARAMS_BF16 / 1e6:.2f}M BF16-sized "
        "parameters a layer), the LM head and a BF16 KV cache (147,456 bytes a token); the "
        f"drafter ASSUMED an EAGLE-3 head of {DRAFT_PARAMS / 1e6:.0f}M parameters (its config "
        "not read); one H100 SXM (preset), SGLang v0.5.3.post3: prefill first, the overlap "
        "scheduler on for plain decoding and off for EAGLE, every pass up to 8 requests graphed",
        f"calibrated on the tree's C = 1 job only: accept length {al:.3f} DERIVED as mean ITL / "
        f"mean TPOT ({pub.GPUSTACK_TREE_ITL_MS[1]} / {pub.GPUSTACK_TREE_TPOT_MS[1]} ms: one ITL a "
        f"streamed chunk, one chunk a cycle), flat top-1 rate {top1:.4f} under the 4/4/16 tree "
        f"with the ranks below by {PRIOR}'s residual shares (a prior); batch-1 decode "
        f"{decode_ms:.3f} ms (the drafter passes, the verify over 16 tokens and the extend "
        "derived from it, no per-cycle overhead beyond them) so that the simulated job gives "
        f"the measured {measured(TREE, 1):.2f} tok/s",
        f"the job: a closed loop of C users over {pub.GPUSTACK_REQUESTS} requests of "
        f"{INPUT_TOKENS} prompt and {OUTPUT_TOKENS} answer tokens (fixed: the run's means, "
        "ASSUMED every request at them), output tok/s over the job's time; "
        f"{SERVING_REPLICATIONS} replications, seed {SERVING_SEED}; each sweep row at C = 4 on "
        "its own scenario (the same step and top-1 rate; the chain's conditional rate the "
        "tree's top-1); a tree / chain ratio's ± from the two levels' standard errors",
    )


def case_qwen3_8b_tree() -> Case:
    """Qwen3-8B-FP8 + an EAGLE-3 tree on one H100 SXM, SGLang: the tree's tok/s at C = 2-8,
    the C = 4 sweep's plain and chain levels, gains and tree / chain signs."""
    scored, lines = rows()
    one = simulate(1)
    c4 = sweep()
    chain_al = 1 + calibrated()[1] + calibrated()[1] ** 2
    itl_al = {u: pub.GPUSTACK_TREE_ITL_MS[u] / pub.GPUSTACK_TREE_TPOT_MS[u] for u in SCORED}
    chain_row = pub.GPUSTACK_SWEEP_C4[CHAIN]
    return Case(
        "Qwen3-8B-FP8 + an EAGLE-3 tree (4 steps, topk 4, 16 draft tokens) on one H100 SXM, "
        "SGLang v0.5.3.post3: output tok/s against max concurrency, and at C = 4 plain "
        "decoding, a chain of 2 and six trees on the same server",
        (pub.GPUSTACK_URL,),
        (
            f"{LABEL} {TREE} C=1 (the job)",
            f"{LABEL} {TREE} C=1 mean ITL / mean TPOT (accept length)",
        ),
        scored,
        setup=_setup_lines(),
        notes=(
            f"{error_summary(scored)}. At C = 1 (calibrated on the job) the simulated tree job "
            f"gives {one.speculative_tok_s:.2f} tok/s against {measured(TREE, 1):.2f} measured; "
            f"the simulated batch-1 cycle is {_batch1_cycle_ms():.2f} ms against the "
            f"{pub.GPUSTACK_TREE_ITL_MS[1]} ms mean ITL (not fitted).",
            "Accept lengths mean ITL / mean TPOT reads (not fitted): C = "
            + ", ".join(f"{u}: {a:.2f}" for u, a in itl_al.items())
            + f"; at C = 4 the chain 2 {chain_row[5] / chain_row[4]:.2f} against 1 + x + x^2 = "
            f"{chain_al:.2f} at the fitted top-1 rate x.",
            *lines,
            f"The sweep's 4/4/16 run at C = 4 ({measured(SWEPT_TREE, SWEEP_USERS):.2f}) is "
            f"{1 - measured(SWEPT_TREE, SWEEP_USERS) / measured(TREE, SWEEP_USERS):.1%} below the "
            f"series' ({measured(TREE, SWEEP_USERS):.2f}): the run-to-run spread; the simulated "
            f"4/4/16 at C = 4 is {c4[TREE].speculative_tok_s:.1f}. Not paired: the page's plain "
            "arm at C = 1-8 (vLLM v0.11.0, BF16: another server).",
        ),
    )


def h100_qwen3_8b_tree_cases() -> tuple[Case, ...]:
    return (case_qwen3_8b_tree(),)
