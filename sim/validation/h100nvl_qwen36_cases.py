"""Serving validation: Qwen3.6-27B on one H100 NVL (vLLM 0.21.0), plain and with its MTP
layer (5 tokens, a chain): output tok/s of a 64-task job against the in-flight requests C.

The curve (david-xinyuwei/david-share, run dflash-quality-20260905;
sim/validation/data/serving_curves.toml ``davidshare_qwen36_h100nvl``): the first 32
HumanEval+ and 32 MATH-500 tasks of a frozen manifest, greedy, thinking off, sent by C = 1,
4, 8 simultaneous requests; throughput is the group's completion tokens over its wall time,
tail included; one run a point. By the rule pre-registered in docs/studies/case47-qwen36-h100nvl.md
before any scored run:

* calibrated on C = 1 only: the plain decode step is the plain C = 1 job's time a token,
  (wall - 64 x TTFT) / (tokens - 64); the MTP route gets one conditional rate (flat) for
  the accept length of its counters (1 + accepted / drafts) and the per-cycle overhead that
  makes the derived batch-1 cycle its C = 1 job's time a token (the same formula) times
  that accept length;
* the model, its Gated DeltaNet state and the server are cases 43/44's
  (sim/validation/h100nvl_qwen38_cases.py: cases 39/40's Qwen3.8-27B dict, ASSUMED for
  Qwen3.6-27B, on the H100 NVL preset) with this run's 8,192-token budget;
* the job: case 43's ``ClosedLoop(C, 0, 64, 1)``, prompts of the two read, answers
  lognormal with the mean of both routes' C = 1 groups and the coefficient of variation of
  the plain C = 1 group's 64 answers, capped at the larger budget (8,192);
* scored: both routes' output tok/s at C = 4 and 8.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.h100nvl_qwen38_cases import (
    JOB_REPLICATIONS,
    SCORED_REPLICATIONS,
    JobPoint,
    job_point,
    job_row,
    replications_line,
)
from sim.validation.hybrid_mtp_serving_cases import (
    GDN_STATE_BYTES,
    PLAIN,
    Arm,
    fit_at_one,
    qwen38_vllm_scenario,
)
from sim.validation.serving_point import SERVING_SEED

__all__ = [
    "MTP5",
    "MTP5_ARM",
    "SCORED",
    "TOKEN_BUDGET",
    "accept_length",
    "calibrated",
    "h100nvl_qwen36_cases",
    "job_lengths",
    "measured",
    "token_ms_at_one",
]

MTP5 = "MTP k=5"
#: Draft tokens a cycle (``num_speculative_tokens`` 5).
K = 5
MTP5_ARM = Arm(MTP5, "qwen36-27b-1xh100nvl-vllm-mtp5", {"num_steps": K})
#: This run's ``max_num_batched_tokens`` (cases 43/44's run: 16,384).
TOKEN_BUDGET = 8192
#: The loads scored (C = 1 calibrates).
SCORED = (4, 8)


def measured(route: str, users: int) -> float:
    """``route``'s output tok/s at ``users`` in flight: the group's completion tokens over
    its wall time."""
    return pub.DAVIDSHARE_QWEN36_TOKENS[route][users] / pub.DAVIDSHARE_QWEN36_WALL_S[route][users]


def token_ms_at_one(route: str) -> float:
    """``route``'s time a generated token in its C = 1 job (ms): (wall - n x TTFT) / (tokens
    - n) over its n requests, the TTFT the mean of the streaming group's code and math
    medians (the concurrency groups did not stream; the source prints no TPOT)."""
    n = pub.DAVIDSHARE_QWEN36_REQUESTS
    ttft_s = float(np.mean(pub.DAVIDSHARE_QWEN36_TTFT_MS[route])) / 1e3
    wall_s = pub.DAVIDSHARE_QWEN36_WALL_S[route][1]
    tokens = pub.DAVIDSHARE_QWEN36_TOKENS[route][1]
    return 1e3 * (wall_s - n * ttft_s) / (tokens - n)


def accept_length() -> float:
    """The MTP route's accept length, 1 + accepted / drafts, from its counters over its
    whole process (mostly C = 1: the source has no acceptance by C)."""
    return 1.0 + pub.DAVIDSHARE_QWEN36_MTP_ACCEPTED / pub.DAVIDSHARE_QWEN36_MTP_DRAFTS


def job_lengths() -> tuple[float, float, float]:
    """(prompt tokens, mean answer tokens, the answers' log-sd) of a request: the mean of the
    two prompts read (ASSUMED all equal); the answers' mean over both routes' C = 1 groups
    (standard rejection sampling leaves their distribution the same on both routes); the
    log-sd of a lognormal with the coefficient of variation of the plain C = 1 group's 64
    answers."""
    n = pub.DAVIDSHARE_QWEN36_REQUESTS
    tokens = [pub.DAVIDSHARE_QWEN36_TOKENS[r][1] for r in (PLAIN, MTP5)]
    answers = np.asarray(pub.DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS, dtype=float)
    cv = float(answers.std() / answers.mean())
    return (
        float(np.mean(pub.DAVIDSHARE_QWEN36_PROMPTS_READ)),
        float(np.sum(tokens)) / (2 * n),
        math.sqrt(math.log1p(cv**2)),
    )


@functools.cache
def calibrated() -> tuple[Scenario, float, float, float]:
    """(the calibrated scenario, alpha, the derived batch-1 cycle without overhead, the
    measured one), in ms: the plain decode step and the MTP cycle from the C = 1 jobs, one
    flat conditional rate for the accept length."""
    prompt, output, sigma = job_lengths()
    derived = qwen38_vllm_scenario(
        MTP5_ARM,
        # one PCIe card (TP 1: no all-reduce, the link does not enter)
        hardware={"gpus": 1, "interconnect": "pcie-gen5", "gpu": "H100-NVL"},
        decode_ms=token_ms_at_one(PLAIN),
        prompt=prompt,
        output=output,
        sigmas=(0.0, sigma),
        source="sim.validation.h100nvl_qwen36_cases",
        output_max_tokens=max(pub.DAVIDSHARE_QWEN36_MAX_TOKENS),
        # prefix caching off in the source's servers: 1 + k state blocks
        prefix_caching=False,
    )
    derived = with_overrides(derived, {"serving.token_budget": TOKEN_BUDGET}, source="validation")
    return fit_at_one(derived, accept_length(), K, token_ms_at_one(MTP5))


@functools.cache
def simulate_job(users: int) -> JobPoint:
    """The job as run: ``users`` workers over the 64 requests (mean TPOT and TTFT)."""
    return job_point(
        calibrated()[0],
        users,
        pub.DAVIDSHARE_QWEN36_REQUESTS,
        SCORED_REPLICATIONS.get(users, JOB_REPLICATIONS),
        "mean",
    )


def _row(route: str, users: int, predicted: float, sd: float, side: str) -> Row:
    figure = f"david-share Qwen3.6-27B H100 NVL {route} C={users}"
    inputs = f"closed loop of {users} over 64 tasks (one run)"
    return job_row(
        "64-task job", figure, inputs, users, measured(route, users), predicted, sd, side
    )


def _setup_lines() -> tuple[str, ...]:
    scenario, alpha, passes_ms, cycle_ms = calibrated()
    prompt, output, sigma = job_lengths()
    return (
        "Qwen3.6-27B on one H100 NVL, TP 1, vLLM 0.21.0, every pass graphed: cases 43/44's "
        "model and server (cases 39/40's Qwen3.8-27B dict, ASSUMED for Qwen3.6-27B: its "
        "config.json is not in the stored copy, its 15 shards hold 27.78B parameters as that "
        f"dict's 27.8B; the Gated DeltaNet state {GDN_STATE_BYTES / 1e6:.0f} MB a request); "
        f"chunked prefill at this run's {TOKEN_BUDGET:,}-token budget, prefix caching off, "
        "host work hidden in both arms",
        f"calibrated on C = 1 only: batch-1 decode {scenario.timing.decode_ms:.3f} ms (the "
        "plain C = 1 job's time a token, (wall - 64 x TTFT) / (tokens - 64), TTFT the "
        "streaming group's); one flat conditional rate alpha = "
        f"{alpha:.4f} so that the chain of {K} has the accept length {accept_length():.3f} "
        "(1 + accepted / drafts, the route's counters over its whole process); the per-cycle "
        f"overhead {scenario.timing.cycle_overhead_ms:.3f} ms that makes the derived "
        f"{passes_ms:.2f} ms batch-1 cycle the measured {cycle_ms:.2f} ms (the MTP C = 1 "
        f"job's time a token {token_ms_at_one(MTP5):.3f} ms x that accept length)",
        f"the job: 64 requests in a closed loop of C (ClosedLoop(C, 0, 64, 1)), prompts of "
        f"{prompt:.0f} tokens (ASSUMED all equal, the two read), answers lognormal with mean "
        f"{output:.1f} (both routes' C = 1 groups) and log-sd {sigma:.3f} (the coefficient of "
        "variation of the plain C = 1 group's 64 answers), capped at 8,192; the tasks' frozen "
        "order not reproduced; output tok/s over the whole job, "
        f"{replications_line(SCORED_REPLICATIONS, JOB_REPLICATIONS)} (cases 43/44's "
        f"precision), seed {SERVING_SEED}; the ± of the MTP rows is the paired gain's "
        "Monte Carlo standard error times the plain level",
    )


def case_qwen36_mtp5_h100nvl() -> Case:
    """Qwen3.6-27B + MTP (5 tokens) on one H100 NVL, vLLM 0.21.0: both routes' job tok/s at
    C = 4 and 8."""
    points = {users: simulate_job(users) for users in SCORED}
    rows = [
        row
        for users, p in points.items()
        for row in (
            _row(MTP5, users, p.speculative_tok_s, p.gain_sd * p.baseline_tok_s, "speculative"),
            _row(PLAIN, users, p.baseline_tok_s, p.baseline_sd, "plain"),
        )
    ]
    gains = "; ".join(
        f"{u}: measured {measured(MTP5, u) / measured(PLAIN, u):.2f}, specsim {p.gain:.2f}"
        for u, p in points.items()
    )
    one = simulate_job(1)
    tpot = "; ".join(
        f"{u}: plain {simulate_job(u).baseline_tpot_ms:.2f}, MTP "
        f"{simulate_job(u).speculative_tpot_ms:.2f}"
        for u in (1, *SCORED)
    )
    return Case(
        "Qwen3.6-27B (hybrid) + its MTP layer (5 tokens) on one H100 NVL, vLLM 0.21.0: output "
        "tok/s of a 64-task job against requests in flight, with and without speculation",
        (pub.DAVIDSHARE_QWEN36_URL,),
        (
            f"david-share Qwen3.6-27B {PLAIN} C=1 (time a token)",
            f"david-share Qwen3.6-27B {MTP5} C=1 (time a token), accept length (counters)",
        ),
        tuple(rows),
        setup=_setup_lines(),
        notes=(
            f"Gain (MTP / plain output tok/s) by C: {gains}. {error_summary(rows)}. At C = 1 "
            "(calibrated on the time a token and the accept length, not on tok/s) the "
            f"simulated job gives {one.baseline_tok_s:.1f} "
            f"(plain) and {one.speculative_tok_s:.1f} (MTP) tok/s against "
            f"{measured(PLAIN, 1):.1f} and {measured(MTP5, 1):.1f} measured. No measured "
            "crossing: the gain is at least 2.40 at every C.",
            "Mean TPOT (ms) simulated by C (not scored; the source prints none): " + tpot + ".",
        ),
    )


def h100nvl_qwen36_cases() -> tuple[Case, ...]:
    return (case_qwen36_mtp5_h100nvl(),)
