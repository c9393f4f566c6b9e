"""Adaptive speculation controllers replayed offline on phase-changing workloads
(``controller_study``).

The in-engine policies users can turn on (sim/model/controllers.py: SGLang's adaptive
speculative decoding, vLLM's dynamic speculative decoding as its offline table and with
its online acceptance refresh) run in the serving engine against the static best-k table
(sim/studies/serving/best_k.py), every fixed k and plain decoding, on the same requests
(common random numbers: replication r of every policy replays the same trace with the
same acceptance draws). Its parts: the phases (sim/studies/serving/controller_phases.py;
every replayed request has the scenario's mean prompt and answer lengths), the policies
and vLLM's offline profile (sim/studies/serving/controller_policies.py), the replay and
its per-phase advantages over the table (sim/studies/serving/controller_replay.py); the
90% intervals: sim/studies/serving/controller_draws.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import FixedK, KTable, SpeculationPolicy
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.workload import Workload
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.best_k import best_k_table
from sim.studies.serving.controller_phases import Phase, default_phases, phase_trace, require_mix
from sim.studies.serving.controller_policies import (
    BEST_K_TABLE,
    GIVEN_TABLE,
    VLLM_PROFILE_BATCHES,
    VLLM_PROFILE_K,
    standard_policies,
    vllm_profile,
)
from sim.studies.serving.controller_replay import (
    PHASE_METRICS,
    ReplayResult,
    advantages,
    replay,
    replay_values,
)
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import METRICS, Load
from sim.studies.serving.scenario_plans import ScenarioPlans, study_settings

__all__ = [
    "PHASE_METRICS",
    "VLLM_PROFILE_BATCHES",
    "VLLM_PROFILE_K",
    "Phase",
    "ReplayResult",
    "controller_study",
    "default_phases",
    "phase_trace",
    "replay",
    "vllm_profile",
]


def _replayed_lengths(note: str, w: Workload) -> str:
    """The scenario's lengths note as this replay uses it: the phase trace gives every
    request the mean lengths (``phase_trace``); the scenario's own lengths (``note``) are
    what the static table and the default phases' one-user rate were found on."""
    n_in, n_out = round(w.input_tokens.mean), max(1, round(w.output_tokens.mean))
    own = note.removeprefix("lengths:").strip()
    return (
        f"lengths: every replayed request has the scenario's mean lengths, {n_in} prompt and "
        f"{n_out} output tokens (fixed); the static table and the default phases' rate were "
        f"found on the scenario's own lengths ({own})"
    )


#: Draft lengths the replay's plan must cover: SGLang's largest default candidate (7) and
#: vLLM's profile (5).
REPLAY_MAX_K = 7


#: Closed-loop concurrencies the default static table is chosen at.
TABLE_USERS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)


def _integer_rows(rows: Any) -> tuple[tuple[int, ...], ...]:
    """JSON rows of integers, as ``serving.k_table`` takes them (ValueError for 2.5 or
    true: ``int`` would have made them 2 and 1 without a word)."""
    out = []
    for row in rows:
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in row):
            raise ValueError(f"row {row}: start_bs, end_bs and K must be integers")
        out.append(tuple(row))
    return tuple(out)


def controller_study(
    builder: ScenarioPlans,
    evaluator: PointEvaluator,
    phases: Sequence[Phase],
    num_steps: Sequence[int],
    *,
    k_table: str | None = None,
    phase_requests: int = 60,
) -> ReplayResult:
    """The replay a scenario's ``controllers`` command runs: the static table (given as
    JSON rows, or chosen by best k on the scenario's whole mix), the standard policies,
    and the phases (default: ``default_phases``)."""
    notes: list[str] = []
    table: KTable | None = None
    choices: list[Any] = []
    if k_table is not None:
        try:
            table = KTable(_integer_rows(json.loads(k_table)))  # type: ignore[arg-type]
        except (ValueError, TypeError) as exc:
            raise SpecsimError(f"not a k table: {exc}", source="--k-table") from None
        notes.append("static table: as given")
    max_k = max(REPLAY_MAX_K, *num_steps, table.max_k if table else 0)
    setup = builder.setup(Load("concurrency", 1), max_k)
    plan = setup.plan
    w = plan.workload
    context = w.input_tokens.mean + w.output_tokens.mean / 2
    if phases:  # fail on a bad class name before any simulation
        phase_trace(phases, plan.acceptance.class_names, 0, 1)
    else:
        require_mix(plan)  # before the one-user run the default phases' load comes from
        one = evaluator(Load("concurrency", 1), FixedK(0))
        req_s = float(one.values["aggregate_tok_s"].mean()) / max(1.0, w.output_tokens.mean)
        phases = default_phases(plan, req_s, phase_requests)
        notes.append(
            f"phases: default ({phase_requests} requests each; one user's plain-decoding "
            f"rate {req_s:.3g} requests/s)"
        )
    if table is None:
        rows, choices, more = best_k_table(evaluator, TABLE_USERS, num_steps)
        table = KTable(rows)
        notes.append(
            "static table: best k for per-user tok/s on the scenario's whole mix at "
            f"{', '.join(map(str, TABLE_USERS))} users (sim/studies/serving/best_k.py)"
        )
        notes.extend(more)
    name = GIVEN_TABLE if k_table is not None else BEST_K_TABLE
    policies = standard_policies(plan, table, num_steps, builder.default_steps, context, name)
    notes.append(
        "vLLM profile: ITL from the cost model at batch sizes "
        f"{sorted(vllm_profile(plan, context, 256))} x K {list(VLLM_PROFILE_K)}, acceptance "
        "rates of the whole mix (offline, as generate_config.py); SGLang: default adaptive "
        f"config, starting at k = {builder.default_steps}, no CUDA-graph padding"
    )
    settings, assumed = study_settings(builder, Load("concurrency", 1))
    assumed = tuple(_replayed_lengths(a, w) if a.startswith("lengths:") else a for a in assumed)
    result = replay(
        plan,
        phases,
        policies,
        reference=name,
        replications=setup.replications,
        seed=setup.seed,
        executor=evaluator.executor,
        scenario=builder.base["name"],
        settings={k: v for k, v in settings.items() if k in ("batching", "max_running_requests")},
        assumptions=(*notes, *assumed),
        progress=evaluator.progress,
    )
    method = (builder.base.get("acceptance") or {}).get("method")
    tables = {n: p for n, p in policies.items() if isinstance(p, KTable)}
    configs = {
        n: {"table": [list(r) for r in t.rows], **engine_configs(t.rows, method)}
        for n, t in tables.items()
    }
    result = dataclasses.replace(result, engine_configs=configs)
    return _with_intervals(
        result, builder, evaluator, phases, choices, max_k, table, num_steps, context
    )


def _with_intervals(
    result: ReplayResult,
    builder: ScenarioPlans,
    evaluator: PointEvaluator,
    phases: Sequence[Phase],
    choices: Sequence[Any],
    max_k: int,
    table: KTable,
    ks: Sequence[int],
    context: float,
) -> ReplayResult:
    """``result`` with its 90% intervals from inputs and model (sim/studies/
    controller_draws.py): each advantage per phase, each switch of the best-k table."""
    # lazy: the draws only when the replay has run
    from sim.studies.serving.controller_draws import advantage_intervals, switch_intervals
    from sim.studies.serving.draw_intervals import DRAW_REPLICATIONS, IntervalSources, sources90
    from sim.studies.serving.draws import DrawnPoints
    from sim.uncertainty.model_error import ModelErrorTerm, beyond_measured_note

    r = min(DRAW_REPLICATIONS, int(result.settings["replications"]))

    def policies_of(plan: ServingPlan) -> dict[str, SpeculationPolicy]:
        return standard_policies(plan, table, ks, builder.default_steps, context, result.reference)

    def replayed(
        plan: ServingPlan, policies: Mapping[str, SpeculationPolicy], reps: int
    ) -> dict[str, dict[str, np.ndarray]]:
        per_rep, _, _, _ = replay_values(
            plan,
            phases,
            policies,
            replications=reps,
            seed=int(result.settings["seed"]),
            executor=evaluator.executor,
        )
        return advantages(per_rep, result.reference)

    versus, ran = advantage_intervals(
        builder,
        builder.draws,
        max_k,
        replayed,
        policies_of,
        result.advantage_reps,
        result.versus,
        replications=r,
    )
    terms = [builder.model_error.at(b) for b in result.phase_batches]
    versus = {
        name: {
            m: tuple(
                terms[p].difference(
                    result.versus[name][m][p].mean,
                    iv,
                    result.levels[result.reference][m][p].mean,
                    METRICS[m].higher_is_better,
                )
                for p, iv in enumerate(ivs)
            )
            for m, ivs in by_metric.items()
        }
        if name != result.reference  # the reference against itself: 0, no model error
        else by_metric
        for name, by_metric in versus.items()
    }
    top = builder.model_error.highest_measured
    used: list[ModelErrorTerm] = list(terms)

    def term_at(batch: float) -> ModelErrorTerm:
        used.append(builder.model_error.at(batch))
        return used[-1]

    switches = (
        switch_intervals(
            evaluator,
            DrawnPoints(evaluator, builder.draws),
            [c.users for c in choices],
            [c.best for c in choices],
            "per_user_tok_s",
            top,
            term_at,
        )
        if choices
        else ()
    )
    # the line and JSON give the advantages' widest term (a switch's are at its grid loads)
    widest = max(terms, key=lambda x: x.gain_sigma, default=None)
    note = beyond_measured_note(top, result.max_batch, any(x.active for x in used))
    # what the intervals hold where fewer than two draws ran (every advantage and switch
    # has its Monte Carlo interval): draw_intervals.py ``IntervalSources``
    held = sources90(ran, (), bool(builder.sampled.inputs))
    return dataclasses.replace(
        result,
        versus_interval90=versus,
        switches=switches,
        intervals={
            **builder.sampled.doc(r),
            "label": held.label,
            "draws_run": ran,
            **({"sources": held.value} if held is not IntervalSources.INPUTS else {}),
            "highest_measured_batch": top,
            "replay_max_batch": result.max_batch,
            "phase_decode_batches": list(result.phase_batches),
            **({"model_error": widest.doc()} if widest is not None else {}),
            **({"note": note} if note else {}),
        },
    )
