"""Case 47 replayed (an additional, unscored row set): the same calibrated server running
each measured group's own 64 answers in the order they were sent.

By the rule pre-registered in docs/studies/case47-replay.md before any run of these rows:

* each group replays its own answers (the groups' answers differ: batch-dependent
  numerics), ``DAVIDSHARE_QWEN36_ANSWERS`` (the source's per-task CSVs, each group summing to
  its completion tokens), in the manifest order, C workers each sending the next task when
  its previous one ends (``ClosedLoop(C, 0, 64, 1, tasks)``); prompts as case 47's (96
  tokens each, ASSUMED);
* everything else is case 47's ``calibrated()`` scenario, unchanged; 20 replications a job
  (plain decoding on fixed lengths draws nothing; the MTP jobs differ only in acceptance),
  seed ``SERVING_SEED``, the ± each level's own Monte Carlo standard error;
* reported beside case 47, not scored: the same four measurements as its primary rows, so
  not in the summary and not in the model-error fit.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from sim.binding.bound import bind
from sim.scenario.overrides import with_load
from sim.simulation.serving import (
    ClosedLoop,
    Empirical,
    Fixed,
    Tasks,
    Workload,
    simulate_serving,
    summarize_serving,
    work_out,
)
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.h100nvl_qwen36_cases import MTP5, SCORED, calibrated, measured
from sim.validation.h100nvl_qwen38_cases import job_row
from sim.validation.hybrid_mtp_serving_cases import PLAIN
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.serving_point import SERVING_SEED

__all__ = ["REPLAY_REPLICATIONS", "h100nvl_qwen36_replay_cases", "replayed_job"]

#: Replications of a replayed job (pre-registered).
REPLAY_REPLICATIONS = 20
#: Which policy of the serving setup runs each route's job.
POLICY = {PLAIN: BASELINE, MTP5: SPECULATIVE}


@functools.cache
def replayed_job(route: str, users: int) -> tuple[float, float]:
    """(mean, its Monte Carlo standard error) of the output tok/s of ``route``'s group at
    ``users`` in flight replayed: its own answers in the order sent, by ``users`` workers,
    on case 47's calibrated server, under ``route``'s policy only."""
    scenario = calibrated()[0]
    setup = serving_setup(
        bind(with_load(scenario, concurrency=users, source="validation")), source="validation"
    )
    if scenario.workload.input_sigma:  # case 47's prompts: all one length
        raise ValueError("case 47's prompts are expected to be all one length")
    prompt = scenario.workload.input_tokens or 0
    answers = np.asarray(pub.DAVIDSHARE_QWEN36_ANSWERS[route][users], dtype=np.int64)
    n = answers.shape[0]
    tasks = Tasks(np.full(n, prompt, dtype=np.int64), answers, np.full(n, -1))
    job = Workload(
        ClosedLoop(users, 0.0, n, 1, tasks),
        Empirical(tuple(answers.tolist())),
        Fixed(prompt),
        requests=n,
    )
    plan = replace(setup.plan, workload=job)
    name = POLICY[route]
    run = simulate_serving(
        plan,
        work_out(plan, {name: setup.policies[name]}),
        replications=REPLAY_REPLICATIONS,
        seed=SERVING_SEED,
        delivery_gaps=False,
    )
    summary = summarize_serving(run.records, setup.slo, baseline=None)
    tok_s = summary.policies[name].aggregate_tok_s
    return tok_s.mean, sd_from_ci95(tok_s.ci95, summary.replications)


def _row(route: str, users: int) -> Row:
    predicted, sd = replayed_job(route, users)
    return job_row(
        "64-task job replayed",
        f"david-share Qwen3.6-27B H100 NVL {route} C={users} (replayed job)",
        f"the group's own 64 answers in the order sent, {users} workers (one run)",
        users,
        measured(route, users),
        predicted,
        sd,
        "plain" if route == PLAIN else "speculative",
    )


def case_qwen36_replayed() -> Case:
    """Case 47's jobs replayed with each group's own answers and order (not scored)."""
    rows = [_row(route, users) for users in SCORED for route in (MTP5, PLAIN)]
    gains = "; ".join(
        f"{u}: measured {measured(MTP5, u) / measured(PLAIN, u):.2f}, replayed "
        f"{replayed_job(MTP5, u)[0] / replayed_job(PLAIN, u)[0]:.2f}"
        for u in SCORED
    )
    at_one = ", ".join(
        f"{route} {replayed_job(route, 1)[0]:.1f} against {measured(route, 1):.1f}"
        for route in (PLAIN, MTP5)
    )
    lengths = "; ".join(
        f"{route} C = {u}: {sum(v):,} tokens, longest {max(v):,} (task {v.index(max(v)) + 1})"
        for route, by_c in pub.DAVIDSHARE_QWEN36_ANSWERS.items()
        for u, v in sorted(by_c.items())
    )
    return Case(
        "Case 47 replayed (not scored): Qwen3.6-27B + MTP (5 tokens) on one H100 NVL, each "
        "group's own 64 answers in the order sent, on case 47's calibrated server",
        (pub.DAVIDSHARE_QWEN36_URL,),
        (
            f"case 47's: david-share Qwen3.6-27B {PLAIN} C=1 (time a token)",
            f"david-share Qwen3.6-27B {MTP5} C=1 (time a token), accept length (counters)",
        ),
        tuple(rows),
        setup=(
            "case 47's calibrated scenario unchanged (calibrated on C = 1 only); each group "
            "replays its own answers (the per-task CSVs' candidate_tokens, the C = 1 groups' "
            "reference_tokens), in the manifest order, C workers each sending the next task "
            "when its previous one ends (ClosedLoop(C, 0, 64, 1, tasks)), prompts of case "
            f"47's length (ASSUMED equal); {REPLAY_REPLICATIONS} replications a job, seed "
            f"{SERVING_SEED}, the ± each level's own Monte Carlo standard error",
            f"the groups' answers: {lengths}",
        ),
        notes=(
            f"Gain (MTP / plain output tok/s, each on its own answers) by C: {gains}. "
            f"{error_summary(rows)} (reported beside case 47's primary rows, which a user "
            "without the answers' lengths would get; the pre-registered reading: the MTP "
            "row at C = 8 within 10% puts case 47's miss on the workload draw, beyond 10% "
            f"on the serving model). At C = 1 (calibration, not scored): {at_one} tok/s.",
        ),
        scored=False,
    )


def h100nvl_qwen36_replay_cases() -> tuple[Case, ...]:
    return (case_qwen36_replayed(),)
