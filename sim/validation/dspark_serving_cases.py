"""Serving validation: Qwen3.8-27B with its DSpark speculator (7 block-parallel draft tokens)
on one B200 (vLLM), aggregate output tok/s against closed-loop concurrency.

The DSpark arm of cases 39/40's curve (vllm-project/speculators,
examples/evaluate/results/qwen3_8_27b_dspark, ``dspark_<subset>.csv``;
sim/validation/data/serving_curves.toml ``speculators_qwen38_27b``, "DSpark k=7"), by the
rule pre-registered in docs/studies/public-data-cases39-40.md before any scored run:

* the model, its recurrent state, the server and the workload are cases 39/40's
  (sim/validation/hybrid_mtp_serving_cases.py), the workload pooled over the plain and
  DSpark arms at N = 1;
* the drafter: ``speculation.parallel_draft`` (one drafter pass over the 7 query tokens a
  request, sim/model/cycle.py) of ``DSPARK_DRAFT_PARAMS`` parameters a pass;
* calibrated on N = 1 only: one conditional rate so that the chain of 7 has the accept
  length measured at N = 1, the per-cycle overhead so that the batch-1 cycle is the mean
  ITL at N = 1 times that accept length; the plain decode step is the plain arm's ITL;
* scored: the DSpark arm's aggregate tok/s at N = 2..128 (the 128-stream points included),
  and the throughput gain's crossing of 1 against the measured one (the same linear
  interpolation, ``published_crossover``) when both cross; the gains at each N are
  reported in the notes, not scored (the plain rows are cases 39/40's).
"""

from __future__ import annotations

from sim.binding.kv_capacity import kv_capacity
from sim.model.kv_blocks import whole_blocks
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.decision_cases import published_crossover
from sim.validation.hybrid_mtp_serving_cases import PLAIN, Arm, calibrated, speculative_row
from sim.validation.serving_point import simulate_point

__all__ = ["DSPARK_DRAFT_PARAMS", "case_qwen38_dspark_b200", "dspark_serving_cases"]

#: RedHatAI/Qwen3.8-27B-speculator.dspark (model card: a 5-layer Qwen3-style backbone, the
#: hidden states of 8 target layers, a rank-256 Markov head). speculators builds the layers
#: from the verifier's config (src/speculators/models/dflash/core.py), so a layer at the
#: verifier's sizes without the output gate: q 5120 x 6144 (31.46M), k and v 5120 x 1024
#: (5.24M each), o 6144 x 5120 (31.46M), MLP 3 x 5120 x 17,408 (267.39M): 340.79M; five of
#: them 1,703.9M; fc 8 x 5120 -> 5120 (209.72M); the target's LM head, shared by vLLM's
#: DSpark proposer (1,271.4M); the Markov head's 256 x 248,320 projection (63.57M).
#: ASSUMED: sizes and head counts the verifier's, the draft vocabulary the full one (the
#: checkpoint's config.json was not read).
DSPARK_LAYER_PARAMS = 5120 * 6144 * 2 + 5120 * 1024 * 2 + 3 * 5120 * 17408
DSPARK_DRAFT_PARAMS = 5 * DSPARK_LAYER_PARAMS + 8 * 5120 * 5120 + 1.2714e9 + 256 * 248320
#: Its KV: 5 layers x 4 KV heads x 256 x (K and V) x 2 bytes a token.
DSPARK_KV_BYTES_PER_TOKEN = 5 * 4 * 256 * 2 * 2
DSPARK = "DSpark k=7"
DSPARK_ARM = Arm(
    DSPARK,
    "qwen38-27b-1xb200-vllm-dspark",
    {"num_steps": 7, "parallel_draft": True},
    {
        "draft_params": float(DSPARK_DRAFT_PARAMS),
        "draft_kv_bytes_per_token": float(DSPARK_KV_BYTES_PER_TOKEN),
    },
)
#: The streams at which the measured DSpark server queued (README: median TTFT 11.0 s and
#: 3.4 s): scored, and the summary without them reported beside.
QUEUED_STREAMS = 128


def case_qwen38_dspark_b200(subset: str) -> Case:
    """Qwen3.8-27B + DSpark (7 block-parallel tokens) on one B200, vLLM: aggregate tok/s by
    streams on ``subset``."""
    curves = pub.SPECULATORS_QWEN38_TOK_S[subset]
    itl = pub.SPECULATORS_QWEN38_ITL_MS[subset]
    accept = pub.SPECULATORS_QWEN38_AL[subset][DSPARK]
    scenario, alpha, passes_ms, cycle_ms = calibrated(subset, DSPARK_ARM)
    rows: list[Row] = []
    gains: list[str] = []
    measured_gain: dict[int, float] = {}
    predicted_gain: dict[int, float] = {}
    for users in sorted(curves[DSPARK]):
        if users == 1:
            continue
        p = simulate_point(scenario, users)
        rows.append(speculative_row(subset, DSPARK, users, curves[DSPARK][users], p))
        measured_gain[users] = curves[DSPARK][users] / curves[PLAIN][users]
        predicted_gain[users] = p.speedup
        gains.append(
            f"{users}: measured {measured_gain[users]:.2f}, specsim {p.speedup:.2f} "
            f"(plain {p.baseline_tok_s:.0f} against {curves[PLAIN][users]:.0f})"
        )
    measured_x = published_crossover(measured_gain)
    predicted_x = published_crossover(predicted_gain)
    figure = f"speculators Qwen3.8-27B {subset} {DSPARK} crossover"
    if measured_x is not None and predicted_x is not None:
        rows.append(
            Row(
                "crossover concurrency (users)",
                figure,
                "k = 7 block-parallel, aggregate tok/s, closed loop 2..128 users",
                measured_x,
                predicted_x,
            )
        )
        crossing = (
            f"Crossing of the throughput gain through 1: measured {measured_x:.1f} streams, "
            f"predicted {predicted_x:.1f} (linear between the loads around it)."
        )
    elif measured_x is not None:
        top = max(predicted_gain)
        crossing = (
            f"Crossing of the throughput gain through 1: measured {measured_x:.1f} streams; "
            f"predicted: none up to {top} streams (gain {predicted_gain[top]:.2f} there) - a "
            "miss, not scored as a number."
        )
    else:
        crossing = "The measured gain does not cross 1 up to 128 streams."
    levels = [r for r in rows if r.load is not None]
    unqueued = [r for r in levels if r.load is not None and r.load < QUEUED_STREAMS]
    one = simulate_point(scenario, 1)
    pool = kv_capacity(scenario, speculates=True)
    assert pool.tokens is not None and pool.state is not None
    k = scenario.num_steps
    slots = k + 1
    held = pool.state.tokens(slots, True)
    # a mean request's context and lookahead slots, in whole blocks
    context = whole_blocks(round(scenario.timing.context_tokens or 0) + slots, pool.blocks(True))
    return Case(
        "Qwen3.8-27B (hybrid: 48 Gated DeltaNet, 16 attention layers) + its DSpark speculator "
        f"(7 block-parallel draft tokens) on one B200, vLLM 0.30.1rc1, {subset}: aggregate "
        "output tok/s against closed-loop concurrency",
        (pub.SPECULATORS_QWEN38_URL,),
        (
            f"speculators Qwen3.8-27B {subset} {PLAIN} N=1 (mean ITL)",
            f"speculators Qwen3.8-27B {subset} {DSPARK} N=1 (mean ITL, accept length)",
        ),
        tuple(rows),
        setup=(
            "cases 39/40's model, recurrent state, B200, vLLM server and workload; the "
            "drafter one pass over the 7 query tokens a request (speculation.parallel_draft), "
            f"{DSPARK_DRAFT_PARAMS / 1e9:.3f}B parameters read a pass (5 Qwen3 layers at the "
            "verifier's sizes, the fc over 8 target layers, the shared LM head, the Markov "
            "head; sizes ASSUMED the verifier's, the config not read), "
            f"{DSPARK_KV_BYTES_PER_TOKEN:,} bytes of KV a token",
            f"calibrated on N = 1 only: batch-1 decode {itl[PLAIN][1]:.3f} ms (the plain "
            f"arm's mean ITL); one conditional rate alpha = {alpha:.4f} (flat, ASSUMED) so "
            f"that the chain of 7 has the measured accept length {accept[1]:.3f}; the "
            f"per-cycle overhead {scenario.timing.cycle_overhead_ms:.3f} ms that makes the "
            f"derived {passes_ms:.2f} ms batch-1 cycle the measured {cycle_ms:.2f} ms (the "
            "DSpark arm's mean ITL x that accept length); the measured accept length stays "
            f"within {min(accept.values()):.3f}-{max(accept.values()):.3f} at every N (not "
            "used)",
            f"vLLM's KV pool ({pool.tokens:,} tokens) also holds each running request's "
            + (
                f"states, {slots} slots at k = {k}"
                if pool.state.layouts is None
                else f"states (recurrent and conv) in vLLM's block layout, "
                f"{pool.state.layouts[0].linear_groups} groups of linear layers x "
                f"({pool.state.layouts[0].state_blocks(1)} + k) blocks of "
                f"{pool.state.layouts[0].block_tokens} tokens at k = {k}, its context and "
                "lookahead in whole blocks"
            )
            + f" ({held:,} tokens a request, docs/kv-capacity.md): at 128 streams it runs about "
            f"{pool.tokens // (held + context):d} of them at once and the rest wait",
            "scored as pre-registered (docs/accuracy-under-load.md): the DSpark arm's levels "
            "at N = 2..128, the 128-stream points included though the server queued there "
            "(median TTFT 11.0 s and 3.4 s in the README), and the crossing; the gains are "
            "reported, the plain rows are cases 39/40's",
        ),
        notes=(
            "Throughput gain (DSpark / plain aggregate tok/s) by streams: "
            + "; ".join(gains)
            + f". {crossing} {error_summary(levels)} (the levels); "
            f"without the 128-stream point: {error_summary(unqueued)}. At N = 1 "
            "(calibrated on its ITL and accept length, not on tok/s) the simulation gives "
            f"{one.speculative_tok_s:.1f} tok/s against {curves[DSPARK][1]:.1f} measured.",
        ),
    )


def dspark_serving_cases() -> tuple[Case, ...]:
    return tuple(case_qwen38_dspark_b200(s) for s in pub.SPECULATORS_QWEN38_SUBSETS)
