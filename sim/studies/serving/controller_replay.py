"""The replay of the phases under every policy (``replay``; the phases:
sim/studies/serving/controller_phases.py, the policies:
sim/studies/serving/controller_policies.py), on the same requests (common random numbers:
replication r of every policy replays the same trace with the same acceptance draws).

Per phase (requests by arrival) each policy's per-user tok/s, TPOT p50 and p99 and TTFT
p50 per replication (``PHASE_METRICS``), and the paired difference from the reference
(the static table) with its 95% interval (> 0: the policy does better than the table;
``advantages``); each phase's mean decode batch, where its answers take the model-error
term (``phase_batches``). What it answers: ``ReplayResult``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.model.policy import SpeculationPolicy
from sim.parallel import Executor
from sim.simulation.serving.lengths import Fixed
from sim.simulation.serving.metrics import Ratio, mean_interval, request_metrics
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import Trace, Workload
from sim.studies.serving.controller_phases import Phase, phase_trace
from sim.studies.serving.paired_metrics import METRICS, paired_difference, ratio_doc

__all__ = [
    "DECODE_BATCH",
    "PHASE_METRICS",
    "PhaseValues",
    "ReplayResult",
    "advantages",
    "phase_batches",
    "replay",
    "replay_values",
]


PHASE_METRICS: tuple[str, ...] = ("per_user_tok_s", "tpot_p50_ms", "tpot_p99_ms", "ttft_p50_ms")


def _phase_values(rec: ServingRecord, phase_of: np.ndarray, phases: int) -> dict[str, np.ndarray]:
    """Per phase (phases,), each metric of ``PHASE_METRICS`` of one replication."""
    m = request_metrics(rec)
    out = {name: np.full(phases, np.nan) for name in (*PHASE_METRICS, DECODE_BATCH)}
    of_row = phase_of[rec.sample_index]  # the kept rows (all, or a long run's sample)
    for p in range(phases):
        rows = of_row == p
        tok, tpot, ttft = m["per_user_tok_s"][rows], m["tpot_ms"][rows], m["ttft_ms"][rows]
        out["per_user_tok_s"][p] = np.nanmean(tok)
        out["tpot_p50_ms"][p] = np.nanquantile(tpot, 0.5)
        out["tpot_p99_ms"][p] = np.nanquantile(tpot, 0.99)
        out["ttft_p50_ms"][p] = np.nanquantile(ttft, 0.5)
        out[DECODE_BATCH][p] = _decode_batch(rec, rows)
    return out


#: The extra per-phase value ``_phase_values`` keeps: the phase's mean decode batch
#: (``_decode_batch``), where its answers take the model-error term (``phase_batches``).
DECODE_BATCH = "decode_batch"


def _decode_batch(rec: ServingRecord, rows: np.ndarray) -> float:
    """The mean number of requests decoding (of every phase) over the span from the first
    decode start to the last finish of the kept ``rows`` (Q,) bool, from the requests'
    decode intervals (each kept row standing for ``rec.stride`` requests); NaN when none of
    ``rows`` decodes."""
    dec = rec.decode_start_ms >= 0
    mine = rows & dec
    if not np.any(mine):
        return math.nan
    lo, hi = float(rec.decode_start_ms[mine].min()), float(rec.finish_ms[mine].max())
    if hi <= lo:
        return 1.0
    start, end = rec.decode_start_ms[dec], rec.finish_ms[dec]
    overlap = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None)
    return float(overlap.sum()) * rec.stride / (hi - lo)


def phase_batches(per_rep: PhaseValues) -> tuple[float, ...]:
    """Each phase's mean decode batch (``_decode_batch``, the mean over the replications
    where the phase decodes), the largest over the policies, at least 1 (phases,)."""
    values = np.array([[r[DECODE_BATCH] for r in reps] for reps in per_rep.values()])
    seen = np.isfinite(values)  # (policies, replications, phases)
    total = np.where(seen, values, 0.0).sum(axis=1)
    mean = np.divide(total, seen.sum(axis=1), out=np.ones_like(total), where=seen.any(axis=1))
    return tuple(float(max(1.0, b)) for b in mean.max(axis=0))


@dataclass(frozen=True, slots=True)
class ReplayResult:
    scenario: str
    phases: tuple[Phase, ...]
    policies: dict[str, str]
    reference: str
    levels: dict[str, dict[str, tuple[Ratio, ...]]]  # policy -> metric -> per phase
    versus: dict[str, dict[str, tuple[Ratio, ...]]]  # paired advantage over the reference
    overall: dict[str, Ratio]  # aggregate tok/s over the whole trace
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    #: The static tables (the reference, vLLM's offline DSD table) as each engine
    #: accepts them (sim/studies/engine_configs.py), by policy name.
    engine_configs: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Per policy and metric the advantage over the reference per replication (R, phases).
    advantage_reps: dict[str, dict[str, np.ndarray]] = dataclasses.field(
        default_factory=dict, repr=False
    )
    #: Per policy and metric, per phase the advantage's 90% interval from inputs and model
    #: (sim/studies/serving/controller_draws.py); empty: not computed.
    versus_interval90: dict[str, dict[str, tuple[list[float] | None, ...]]] = dataclasses.field(
        default_factory=dict
    )
    #: Where the static best-k table switches k, each with its 90% interval from inputs
    #: and model (sim/studies/serving/controller_draws.py ``switch_intervals``).
    switches: tuple[dict[str, Any], ...] = ()
    #: What the intervals took (sim/uncertainty/perturb.py ``InputDraws.doc``) and ``draws_run``.
    intervals: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The largest decode batch any policy ran in the replay.
    max_batch: int = 0
    #: Each phase's mean decode batch (``phase_batches``), where its advantages take the
    #: model-error term.
    phase_batches: tuple[float, ...] = ()

    def winners(self) -> list[dict[str, Any]]:
        """Per phase and metric, the best policy by its mean (and whether it is
        significantly better than the reference); a policy whose mean ties the reference's
        (a fixed k that is the table's k at every batch the phase saw) leaves the
        reference the best."""
        out = []
        for p, phase in enumerate(self.phases):
            for metric in PHASE_METRICS:
                better = METRICS[metric].higher_is_better

                def key(
                    name: str, metric: str = metric, p: int = p, up: bool = better
                ) -> tuple[float, bool]:
                    v = self.levels[name][metric][p].mean
                    return (v if up else -v, name == self.reference)

                best = max(self.levels, key=key)
                adv = self.versus[best][metric][p]
                iv = self.versus_interval90.get(best, {}).get(metric, (None,) * (p + 1))[p]
                out.append(
                    {
                        "phase": p,
                        "phase_label": phase.label(),
                        "metric": metric,
                        "best": best,
                        "advantage_over_reference": ratio_doc(adv),
                        "significant": adv.ci95 is not None and adv.ci95[0] > 0,
                        **(
                            {"interval90": iv, "better_within_inputs": iv[0] > 0}
                            if iv is not None
                            else {}
                        ),
                    }
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            **self.settings,
            "engine_configs": self.engine_configs,
            "reference": self.reference,
            "phases": [
                {
                    "requests": p.requests,
                    "rate_per_s": p.rate_per_s,
                    "shares": dict(p.shares),
                    "label": p.label(),
                }
                for p in self.phases
            ],
            "metrics": {
                m: {
                    "label": METRICS[m].label,
                    "unit": METRICS[m].unit,
                    "higher_is_better": METRICS[m].higher_is_better,
                }
                for m in PHASE_METRICS
            },
            "policies": {
                name: {
                    "description": desc,
                    "aggregate_tok_s": ratio_doc(self.overall[name]),
                    "phases": {
                        m: [ratio_doc(r) for r in self.levels[name][m]] for m in PHASE_METRICS
                    },
                    "advantage_over_reference": {
                        m: [ratio_doc(r) for r in self.versus[name][m]] for m in PHASE_METRICS
                    },
                    **(
                        {
                            "advantage_interval90": {
                                m: list(self.versus_interval90[name][m]) for m in PHASE_METRICS
                            }
                        }
                        if name in self.versus_interval90
                        else {}
                    ),
                }
                for name, desc in self.policies.items()
            },
            "winners": self.winners(),
            "table_switches": list(self.switches),
            "interval90": self.intervals,
            "assumptions": list(self.assumptions),
        }


#: Per policy, one dict a replication of each metric's value per phase (phases,).
PhaseValues = dict[str, list[dict[str, np.ndarray]]]


def replay_values(
    plan: ServingPlan,
    phases: Sequence[Phase],
    policies: Mapping[str, SpeculationPolicy],
    *,
    replications: int,
    seed: int,
    executor: Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[PhaseValues, dict[str, np.ndarray], Trace, int]:
    """Replay ``phases`` under every policy on ``plan``'s server (its workload replaced by
    the phase trace): per policy each replication's ``PHASE_METRICS`` per phase, each
    replication's aggregate tok/s over the whole trace (R,), the trace, and the largest
    decode batch any policy ran."""
    w = plan.workload
    trace, phase_of = phase_trace(
        phases,
        plan.acceptance.class_names,
        round(w.input_tokens.mean),
        max(1, round(w.output_tokens.mean)),
    )
    workload = Workload(trace, Fixed(1), Fixed(0), requests=trace.size, warmup=0)
    replayed = dataclasses.replace(plan, workload=workload)
    run = simulate_serving(
        replayed,
        work_out(replayed, dict(policies)),
        replications=replications,
        seed=seed,
        executor=executor,
        progress=progress,
    )
    n = len(phases)
    per_rep = {
        name: [_phase_values(r, phase_of, n) for r in recs] for name, recs in run.records.items()
    }
    overall = {
        name: np.array([1000.0 * r.tokens_delivered / r.window_ms for r in recs])
        for name, recs in run.records.items()
    }
    top = max(
        (
            int(np.flatnonzero(r.batch_time_ms)[-1])
            for recs in run.records.values()
            for r in recs
            if np.any(r.batch_time_ms)
        ),
        default=0,
    )
    return per_rep, overall, trace, top


def advantages(per_rep: PhaseValues, reference: str) -> dict[str, dict[str, np.ndarray]]:
    """Per policy and metric the paired advantage over ``reference`` (R, phases): > 0 the
    policy does better (sim/studies/serving/paired_metrics.py ``paired_difference``)."""
    ref = {m: np.stack([r[m] for r in per_rep[reference]]) for m in PHASE_METRICS}
    return {
        name: {
            m: paired_difference(
                np.stack([r[m] for r in reps]), ref[m], METRICS[m].higher_is_better
            )
            for m in PHASE_METRICS
        }
        for name, reps in per_rep.items()
    }


def replay(
    plan: ServingPlan,
    phases: Sequence[Phase],
    policies: Mapping[str, SpeculationPolicy],
    *,
    reference: str,
    replications: int,
    seed: int,
    executor: Executor | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Replay ``phases`` under every policy on ``plan``'s server (its workload replaced by
    the phase trace; its acceptance model must have the phases' classes and cover every
    policy's largest k); ``progress(done, total)`` after each replication."""
    if reference not in policies:
        raise ValueError(f"the reference {reference!r} is not among the policies")
    per_rep, overall_reps, trace, max_batch = replay_values(
        plan,
        phases,
        policies,
        replications=replications,
        seed=seed,
        executor=executor,
        progress=progress,
    )
    n = len(phases)
    diffs = advantages(per_rep, reference)
    levels: dict[str, dict[str, tuple[Ratio, ...]]] = {}
    versus: dict[str, dict[str, tuple[Ratio, ...]]] = {}
    for name, reps in per_rep.items():
        levels[name], versus[name] = {}, {}
        for metric in PHASE_METRICS:
            mine = np.stack([r[metric] for r in reps])  # (R, phases)
            levels[name][metric] = tuple(Ratio.across(mine[:, p]) for p in range(n))
            # a signed difference (better than the reference by): its interval is not clipped
            versus[name][metric] = tuple(
                Ratio.across(diffs[name][metric][:, p], mean_interval) for p in range(n)
            )
    return ReplayResult(
        scenario=scenario,
        phases=tuple(phases),
        policies={name: p.describe() for name, p in policies.items()},
        reference=reference,
        levels=levels,
        versus=versus,
        overall={name: Ratio.across(v) for name, v in overall_reps.items()},
        settings={
            **dict(settings or {}),
            "seed": seed,
            "replications": replications,
            "requests": trace.size,
            "input_tokens": int(trace.input_tokens[0]),
            "output_tokens": int(trace.output_tokens[0]),
        },
        assumptions=tuple(assumptions),
        advantage_reps=diffs,
        max_batch=max_batch,
        phase_batches=phase_batches(per_rep),
    )
