"""Serving validation: Qwen3.8-27B on one H100 NVL (vLLM 0.28.0), plain, with its MTP layer
(7 tokens, a chain) and with a DFlash 2 drafter (7 block-parallel tokens): output tok/s of a
64-task job against the in-flight requests C.

The curve (david-xinyuwei/david-share, run qwen38-quality-20260906;
sim/validation/data/serving_curves.toml ``davidshare_qwen38_h100nvl``): the same 64 tasks
(32 HumanEval+, 32 MATH-500, thinking on, temperature 1.0) in one frozen order, sent by a
closed loop of C = 1, 4, 8 requests in flight; throughput is the job's completion tokens over
its wall time, tail included; three seeds a point, the median scored (the source's table).
By the rule pre-registered in docs/studies/case43-44-qwen38-h100nvl.md before any scored run:

* calibrated on C = 1 only: the plain decode step is the plain route's TPOT there; each
  speculative route gets one conditional rate (flat) for its accept length there
  (1 + 7 x accepted / draft tokens) and the per-cycle overhead that makes the derived
  batch-1 cycle its TPOT there times that accept length;
* the model, its Gated DeltaNet state and the server are cases 39/40's
  (sim/validation/hybrid_mtp_serving_cases.py) on the H100 NVL preset; the MTP drafter is
  theirs, the DFlash 2 drafter one pass over the 7 query tokens (``parallel_draft``) of its
  weight file's parameters plus the target's LM head;
* the job: ``ClosedLoop(C, 0, 64, 1)``, prompts of the groups' mean, answers lognormal with
  the mean of all nine C = 1 groups and the spread of the one group read, capped at the
  request's 16,384 tokens;
* scored: each route's median output tok/s at C = 4 and 8 (case 43: plain and MTP; case
  44: DFlash 2, whose plain rows are case 43's).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from sim.binding.bound import bind
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import ClosedLoop, Workload
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.hybrid_mtp_serving_cases import (
    GDN_STATE_BYTES,
    PLAIN,
    QWEN38_MODEL,
    Arm,
    fit_at_one,
    qwen38_vllm_scenario,
)
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.serving_point import SERVING_SEED

__all__ = [
    "DFLASH",
    "DFLASH2_ARM",
    "DFLASH2_DRAFT_PARAMS",
    "JOB_REPLICATIONS",
    "MTP7",
    "MTP7_ARM",
    "SCORED_REPLICATIONS",
    "JobPoint",
    "calibrated",
    "h100nvl_qwen38_cases",
    "job_lengths",
    "job_point",
    "job_row",
    "measured",
    "own_sd_line",
    "precision_line",
    "replications_line",
]

MTP7, DFLASH = "MTP k=7", "DFlash 2 k=7"
#: Draft tokens a cycle, both routes (``num_speculative_tokens`` 7).
K = 7
MTP7_ARM = Arm(MTP7, "qwen38-27b-1xh100nvl-vllm-mtp7", {"num_steps": K})
#: incoai/Qwen3.8-27B-DFlash2: one BF16 weight file of 3,848,817,896 bytes (the source's
#: README), 1.924B parameters; vLLM's DFlash proposer reads the target's LM head beside it
#: (ASSUMED shared: 5 layers at the verifier's sizes, 1.704B, and an fc from 8 target layers,
#: 0.210B, fill the file, leaving no room for a 1.27B head of its own).
DFLASH2_OWN_PARAMS = 3_848_817_896 / 2
DFLASH2_DRAFT_PARAMS = DFLASH2_OWN_PARAMS + QWEN38_MODEL["lm_head_params"]
#: Its KV: 5 layers x 4 KV heads x 256 x (K and V) x 2 bytes a token (ASSUMED, as DSpark's).
DFLASH2_KV_BYTES_PER_TOKEN = 5 * 4 * 256 * 2 * 2
DFLASH2_ARM = Arm(
    DFLASH,
    "qwen38-27b-1xh100nvl-vllm-dflash2",
    {"num_steps": K, "parallel_draft": True},
    {
        "draft_params": float(DFLASH2_DRAFT_PARAMS),
        "draft_kv_bytes_per_token": float(DFLASH2_KV_BYTES_PER_TOKEN),
    },
)
ROUTES = (PLAIN, MTP7, DFLASH)
#: The speculative routes' arms, by route.
ARMS = {MTP7: MTP7_ARM, DFLASH: DFLASH2_ARM}
#: Replications of a simulated job at C = 1 (calibrated there, not scored; 64 heavy-tailed
#: requests: its tail varies).
JOB_REPLICATIONS = 20
#: The loads scored (C = 1 calibrates).
SCORED = (4, 8)
#: Replications of a scored job, by C: each level's own Monte Carlo standard error about
#: 0.5% of it (measured at 100 replications, seed ``SERVING_SEED``: 0.5-0.6% at C = 4,
#: 0.7-0.9% at C = 8, falling as 1 / sqrt(replications); docs/studies/per-request-acceptance.md).
SCORED_REPLICATIONS = {4: 120, 8: 300}


def measured(route: str, users: int, field: str = "tok_s") -> float:
    """The median over the three seeds of ``route``'s ``field`` (tok_s, wall_s, acceptance)
    at ``users`` in flight, as the source tabulates it."""
    table = {
        "tok_s": pub.DAVIDSHARE_QWEN38_TOK_S,
        "wall_s": pub.DAVIDSHARE_QWEN38_WALL_S,
        "acceptance": pub.DAVIDSHARE_QWEN38_ACCEPTANCE,
    }[field]
    return float(np.median([table[seed][route][users] for seed in pub.DAVIDSHARE_QWEN38_SEEDS]))


def _seed_range(route: str, users: int) -> tuple[float, float]:
    values = [pub.DAVIDSHARE_QWEN38_TOK_S[s][route][users] for s in pub.DAVIDSHARE_QWEN38_SEEDS]
    return min(values), max(values)


def job_lengths() -> tuple[float, float, float]:
    """(mean prompt tokens, mean answer tokens, the answers' log-sd) of a request: the
    prompts of a group (identical in every group); the answers' mean over all nine C = 1
    groups (tok/s x wall = a group's completion tokens; standard rejection sampling leaves
    the answers' distribution the same on every route), the log-sd of a lognormal with the
    coefficient of variation of the one group whose spread was read."""
    n = pub.DAVIDSHARE_QWEN38_REQUESTS
    tokens = [
        pub.DAVIDSHARE_QWEN38_TOK_S[s][r][1] * pub.DAVIDSHARE_QWEN38_WALL_S[s][r][1]
        for s in pub.DAVIDSHARE_QWEN38_SEEDS
        for r in ROUTES
    ]
    mean_read, sd_read = pub.DAVIDSHARE_QWEN38_SPREAD_READ
    sigma = math.sqrt(math.log1p((sd_read / mean_read) ** 2))
    return pub.DAVIDSHARE_QWEN38_PROMPT_TOKENS / n, float(np.mean(tokens)) / n, sigma


def _scenario(arm: Arm) -> Scenario:
    """``arm``'s derived scenario (no per-cycle overhead, alpha to be fitted): the plain
    decode step at C = 1 measured, the other passes from the hardware model."""
    prompt, output, sigma = job_lengths()
    return qwen38_vllm_scenario(
        arm,
        # one PCIe card (TP 1: no all-reduce, the link does not enter)
        hardware={"gpus": 1, "interconnect": "pcie-gen5", "gpu": "H100-NVL"},
        decode_ms=pub.DAVIDSHARE_QWEN38_TPOT_MS[PLAIN][1],
        prompt=prompt,
        output=output,
        sigmas=(0.0, sigma),
        source="sim.validation.h100nvl_qwen38_cases",
        output_max_tokens=pub.DAVIDSHARE_QWEN38_MAX_TOKENS,
        # the source's servers ran with --no-enable-prefix-caching: 1 + k state blocks
        prefix_caching=False,
    )


@functools.cache
def calibrated(route: str) -> tuple[Scenario, float, float, float, float]:
    """(``route``'s calibrated scenario, the accept length at C = 1, alpha, the derived
    batch-1 cycle without overhead, the measured one), in ms: one flat conditional rate for
    the accept length (1 + 7 x the median acceptance rate), the per-cycle overhead for the
    cycle (the route's TPOT at C = 1 x that accept length)."""
    arm = ARMS[route]
    derived = _scenario(arm)
    al = 1.0 + K * measured(route, 1, "acceptance")
    token_ms = pub.DAVIDSHARE_QWEN38_TPOT_MS[arm.name][1]
    fitted, alpha, passes_ms, measured_ms = fit_at_one(derived, al, K, token_ms)
    return fitted, al, alpha, passes_ms, measured_ms


@dataclass(frozen=True, slots=True)
class JobPoint:
    """One simulated job at C in flight: both routes' output tok/s over the job and the
    paired gain, with their Monte Carlo standard errors (``speculative_sd`` the level's own,
    not through the gain); both routes' pooled TPOT and TTFT (ms, the P50 or the mean),
    beside the measured ones (not scored)."""

    baseline_tok_s: float
    baseline_sd: float
    speculative_tok_s: float
    speculative_sd: float
    gain: float
    gain_sd: float
    baseline_tpot_ms: float
    speculative_tpot_ms: float
    baseline_ttft_ms: float
    speculative_ttft_ms: float


def job_point(
    scenario: Scenario, users: int, requests: int, replications: int, tpot: str = "p50"
) -> JobPoint:
    """A finite job of ``requests`` sent by ``users`` workers on ``scenario``'s server:
    output tokens over the whole job's time (prefill, ramp and tail included),
    ``replications`` replications (the first ones of ``SERVING_SEED`` whatever their
    number); ``tpot``: the TPOT and TTFT statistic reported (``p50`` or ``mean``)."""
    sc = with_load(scenario, concurrency=users, source="validation")
    setup = serving_setup(bind(sc), source="validation")
    job = Workload(
        ClosedLoop(users, 0.0, requests, 1),
        setup.plan.workload.output_tokens,
        setup.plan.workload.input_tokens,
        requests=requests,
    )
    plan = replace(setup.plan, workload=job)
    run = simulate_serving(
        plan,
        work_out(plan, setup.policies),
        replications=replications,
        seed=SERVING_SEED,
        # no ITL is read: the same numbers without streaming the delivery gaps
        delivery_gaps=False,
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    base, spec = summary.policies[BASELINE], summary.policies[SPECULATIVE]
    gain = summary.speedup[SPECULATIVE]["aggregate_tok_s"]
    r = summary.replications
    return JobPoint(
        base.aggregate_tok_s.mean,
        sd_from_ci95(base.aggregate_tok_s.ci95, r),
        spec.aggregate_tok_s.mean,
        sd_from_ci95(spec.aggregate_tok_s.ci95, r),
        gain.mean,
        sd_from_ci95(gain.ci95, r),
        getattr(base.metrics["tpot_ms"], tpot),
        getattr(spec.metrics["tpot_ms"], tpot),
        getattr(base.metrics["ttft_ms"], tpot),
        getattr(spec.metrics["ttft_ms"], tpot),
    )


@functools.cache
def simulate_job(route: str, users: int) -> JobPoint:
    """The job as run: ``users`` workers over the 64 requests."""
    return job_point(
        calibrated(route)[0],
        users,
        pub.DAVIDSHARE_QWEN38_REQUESTS,
        SCORED_REPLICATIONS.get(users, JOB_REPLICATIONS),
    )


def _tpot_note(route: str) -> str:
    """The P50 TPOT simulated against measured at every C of ``route`` and plain decoding
    (not scored: the step the job's levels rest on)."""
    tpot = pub.DAVIDSHARE_QWEN38_TPOT_MS
    parts = []
    for users in (1, *SCORED):
        p = simulate_job(route, users)
        parts.append(
            f"{users}: plain {p.baseline_tpot_ms:.2f} against {tpot[PLAIN][users]:.2f}, "
            f"{route} {p.speculative_tpot_ms:.2f} against {tpot[route][users]:.2f}"
        )
    return "P50 TPOT (ms) simulated against measured (not scored) by C: " + "; ".join(parts) + "."


def _miss_note(route: str) -> str:
    """What the levels' misses are made of, read off the source's own figures (nothing
    applied or fitted)."""
    _, output, sigma = job_lengths()
    mean_read, _ = pub.DAVIDSHARE_QWEN38_SPREAD_READ
    tpot = pub.DAVIDSHARE_QWEN38_TPOT_MS
    per_token = {r: 1e3 / measured(r, 1) for r in (PLAIN, route)}
    p = simulate_job(route, 8)
    in_flight = (
        p.baseline_tok_s * p.baseline_tpot_ms / 1e3,
        measured(PLAIN, 8) * tpot[PLAIN][8] / 1e3,
    )
    return (
        "Where the misses come from: the step is predicted within 8% at C = 4 and 8 (the P50 "
        "TPOT above), so the levels miss through the job. (i) At C = 1 the job runs at "
        f"{per_token[route]:.2f} ms a token on the {route} route (wall / tokens) against its "
        f"P50 TPOT {tpot[route][1]:.2f} ({per_token[route] / tpot[route][1] - 1:+.0%}), the "
        f"plain route at {per_token[PLAIN]:.2f} against {tpot[PLAIN][1]:.2f} "
        f"({per_token[PLAIN] / tpot[PLAIN][1] - 1:+.0%}): a speculative request's time a token "
        "varies between requests (with what each accepts), and the job weighs each request by "
        "its tokens, the P50 by its count; one acceptance rate for every request cannot "
        "represent that, and the calibration on the P50 carries it into every speculative "
        "level. (ii) The plain job at C = 8 is over-predicted although its step is "
        "under-predicted: the simulated job keeps more requests in flight on average "
        f"(tok/s x TPOT: {in_flight[0]:.2f} of 8 against {in_flight[1]:.2f} measured) (the "
        "lognormal's median answer "
        f"{output / math.exp(sigma**2 / 2):.0f} tokens against the "
        f"{pub.DAVIDSHARE_QWEN38_P50_READ:.0f} of the group read, whose mean is "
        f"{mean_read:.0f}; the tasks' frozen order is not reproduced)."
    )


def _figure(route: str, users: int) -> str:
    return f"david-share Qwen3.8-27B H100 NVL {route} C={users}"


def job_row(
    job: str,
    figure: str,
    inputs: str,
    users: int,
    measured_tok_s: float,
    predicted: float,
    sd: float,
    side: str,
) -> Row:
    """A scored row of a finite job's output tok/s (``job``: "64-task job") at ``users``
    requests in flight, calibrated at C = 1 only; ``inputs``: the load as the source ran
    it."""
    return Row(
        f"aggregate output tok/s of the {job}"
        + (" (no speculation)" if side == "plain" else " (speculation)"),
        figure,
        inputs,
        measured_tok_s,
        predicted,
        sd,
        load=users,
        calibrated_loads=(1.0,),
        side=side,
    )


def _row(route: str, users: int, predicted: float, sd: float, side: str) -> Row:
    lo, hi = _seed_range(route, users)
    inputs = f"closed loop of {users} over 64 tasks (three seeds: {lo:.0f}-{hi:.0f} tok/s)"
    figure = _figure(route, users)
    return job_row(
        "64-task job", figure, inputs, users, measured(route, users), predicted, sd, side
    )


def replications_line(scored: dict[int, int], at_one: int) -> str:
    """How many replications each load's job ran: ``scored`` by C, ``at_one`` at C = 1."""
    counts = ", ".join(f"{n} at C = {users}" for users, n in scored.items())
    return f"{counts} ({at_one} at C = 1, not scored)"


def precision_line(scored: dict[int, int], arm: str, jobs: dict[int, JobPoint]) -> str:
    """The replications of a case's jobs (``scored`` by C, ``JOB_REPLICATIONS`` at C = 1),
    the seed, what a row's ± is and each scored level's own Monte Carlo error (``jobs``)."""
    return (
        f"{replications_line(scored, JOB_REPLICATIONS)}, seed {SERVING_SEED}; the ± of a "
        "speculative row is the paired gain's Monte Carlo standard error times the plain "
        f"level; {own_sd_line(arm, jobs)}"
    )


def own_sd_line(arm: str, jobs: dict[int, JobPoint]) -> str:
    """Each scored level's own Monte Carlo standard error relative to it, by C (``jobs``)."""
    parts = [
        f"{users}: plain {p.baseline_sd / p.baseline_tok_s:.2%}, {arm} "
        f"{p.speculative_sd / p.speculative_tok_s:.2%}"
        for users, p in jobs.items()
    ]
    return "each level's own Monte Carlo standard error by C: " + "; ".join(parts)


def _setup_lines(route: str) -> tuple[str, ...]:
    scenario, al, alpha, passes_ms, cycle_ms = calibrated(route)
    jobs = {users: simulate_job(route, users) for users in SCORED}
    prompt, output, sigma = job_lengths()
    accept = [1.0 + K * measured(route, users, "acceptance") for users in (1, *SCORED)]
    tpot = pub.DAVIDSHARE_QWEN38_TPOT_MS
    return (
        "Qwen3.8-27B (cases 39/40's model: 64 layers, 16 full attention, BF16; the Gated "
        f"DeltaNet state {GDN_STATE_BYTES / 1e6:.0f} MB a request) on one H100 NVL (new "
        "preset from NVIDIA's datasheet, NVL column: 3.9 TB/s, 94 GB, 835.5 BF16 TFLOPS "
        "dense), TP 1, vLLM 0.28.0, every pass graphed; chunked prefill at the 16,384-token "
        "budget, host work hidden in both arms",
        f"calibrated on C = 1 only (the median of three seeds): batch-1 decode "
        f"{tpot[PLAIN][1]:.3f} ms (the plain route's P50 TPOT); one flat conditional rate "
        f"alpha = {alpha:.4f} so that the chain of {K} has the accept length "
        f"{al:.3f} (1 + 7 x accepted / draft tokens); the per-cycle overhead "
        f"{scenario.timing.cycle_overhead_ms:.3f} ms that makes the derived {passes_ms:.2f} ms "
        f"batch-1 cycle the measured {cycle_ms:.2f} ms (the route's TPOT "
        f"{tpot[route][1]:.3f} ms x that accept length); the accept length measured at "
        f"C = 4 and 8, {accept[1]:.3f} and {accept[2]:.3f}, not used",
        f"the job: 64 requests in a closed loop of C (ClosedLoop(C, 0, 64, 1)), prompts of "
        f"{prompt:.0f} tokens, answers lognormal with mean {output:.0f} (all nine C = 1 groups) "
        f"and log-sd {sigma:.3f} (ASSUMED shape; the coefficient of variation of the one group "
        "read), capped at 16,384; the tasks' frozen order not reproduced; output tok/s over "
        f"the whole job, {precision_line(SCORED_REPLICATIONS, route, jobs)}",
    )


def case_qwen38_mtp7_h100nvl() -> Case:
    """Qwen3.8-27B + MTP (7 tokens) on one H100 NVL, vLLM 0.28.0: both routes' job tok/s at
    C = 4 and 8."""
    rows: list[Row] = []
    gains: list[str] = []
    for users in SCORED:
        p = simulate_job(MTP7, users)
        rows += [
            _row(MTP7, users, p.speculative_tok_s, p.gain_sd * p.baseline_tok_s, "speculative"),
            _row(PLAIN, users, p.baseline_tok_s, p.baseline_sd, "plain"),
        ]
        gains.append(
            f"{users}: measured {measured(MTP7, users) / measured(PLAIN, users):.2f}, "
            f"specsim {p.gain:.2f}"
        )
    one = simulate_job(MTP7, 1)
    return Case(
        "Qwen3.8-27B (hybrid) + its MTP layer (7 tokens) on one H100 NVL, vLLM 0.28.0: output "
        "tok/s of a 64-task job against requests in flight, with and without speculation",
        (pub.DAVIDSHARE_QWEN38_URL,),
        (f"david-share {PLAIN} C=1 (P50 TPOT)", f"david-share {MTP7} C=1 (P50 TPOT, acceptance)"),
        tuple(rows),
        setup=_setup_lines(MTP7),
        notes=(
            "Gain (MTP / plain output tok/s, the medians) by C: "
            + "; ".join(gains)
            + f". {error_summary(rows)}. At C = 1 (calibrated on TPOT and accept length, not "
            f"on tok/s) the simulated job gives {one.baseline_tok_s:.1f} (plain) and "
            f"{one.speculative_tok_s:.1f} (MTP) tok/s against {measured(PLAIN, 1):.1f} and "
            f"{measured(MTP7, 1):.1f} measured. No measured crossing: the gain is at least "
            "1.96 at every C.",
            _tpot_note(MTP7),
            _miss_note(MTP7),
        ),
    )


def case_qwen38_dflash2_h100nvl() -> Case:
    """Qwen3.8-27B + DFlash 2 (7 block-parallel tokens) on one H100 NVL, vLLM 0.28.0: the
    DFlash route's job tok/s at C = 4 and 8 (the plain rows are case 43's)."""
    rows: list[Row] = []
    gains: list[str] = []
    for users in SCORED:
        p = simulate_job(DFLASH, users)
        rows.append(
            _row(DFLASH, users, p.speculative_tok_s, p.gain_sd * p.baseline_tok_s, "speculative")
        )
        gains.append(
            f"{users}: measured {measured(DFLASH, users) / measured(PLAIN, users):.2f}, "
            f"specsim {p.gain:.2f} (plain {p.baseline_tok_s:.0f} against "
            f"{measured(PLAIN, users):.0f})"
        )
    one = simulate_job(DFLASH, 1)
    return Case(
        "Qwen3.8-27B (hybrid) + a DFlash 2 drafter (7 block-parallel tokens) on one H100 NVL, "
        "vLLM 0.28.0: output tok/s of a 64-task job against requests in flight",
        (pub.DAVIDSHARE_QWEN38_URL,),
        (
            f"david-share {PLAIN} C=1 (P50 TPOT)",
            f"david-share {DFLASH} C=1 (P50 TPOT, acceptance)",
        ),
        tuple(rows),
        setup=(
            f"the drafter one pass over the {K} query tokens a request (speculation."
            f"parallel_draft): its weight file's {DFLASH2_OWN_PARAMS / 1e9:.3f}B parameters and "
            f"the target's LM head (shared, ASSUMED), {DFLASH2_DRAFT_PARAMS / 1e9:.3f}B a pass; "
            f"{DFLASH2_KV_BYTES_PER_TOKEN:,} bytes of KV a token (ASSUMED)",
            *_setup_lines(DFLASH),
        ),
        notes=(
            "Gain (DFlash 2 / plain output tok/s, the medians) by C: "
            + "; ".join(gains)
            + f". {error_summary(rows)}. At C = 1 (calibrated on TPOT and accept length, not "
            f"on tok/s) the simulated job gives {one.speculative_tok_s:.1f} tok/s against "
            f"{measured(DFLASH, 1):.1f} measured. No measured crossing: the gain is at least "
            "2.38 at every C.",
            _tpot_note(DFLASH),
            _miss_note(DFLASH),
        ),
    )


def h100nvl_qwen38_cases() -> tuple[Case, ...]:
    return (case_qwen38_mtp7_h100nvl(), case_qwen38_dflash2_h100nvl())
