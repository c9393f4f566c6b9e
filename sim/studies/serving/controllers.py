"""Adaptive speculation controllers replayed offline on phase-changing workloads.

The in-engine policies users can turn on (sim/model/controllers.py: SGLang's adaptive
speculative decoding, vLLM's dynamic speculative decoding as its offline table and with
its online acceptance refresh) run in the serving engine against the static best-k table
(sim/studies/serving/best_k.py), every fixed k and plain decoding, on the same requests (common
random numbers: replication r of every policy replays the same trace with the same
acceptance draws).

Phase-changing workload (``phase_trace``): consecutive phases, each a number of requests
arriving at a constant rate (evenly spaced, as a paced load generator sends them) with a
share per acceptance class (e.g. 90% chat then 90% code); classes are interleaved
deterministically so each phase has its shares exactly (largest remainder, request by
request). The trace has no random part: replications differ by their acceptance draws
(and per-request rate spread, if the scenario has one). Lengths are the scenario's mean
prompt and answer lengths.

vLLM's offline profile is what vllm/v1/spec_decode/dynamic/generate_config.py measures:
the per-position acceptance rates of the workload (here the scenario's mix, averaged over
the whole trace: vLLM profiles once, offline) and the ITL at batch sizes 1, 4, 16, 64, 256
(up to ``max_num_seqs``) for K = 0, 1, 3, 5; the ITL here is the cost model's iteration
time at that batch and K with every request at the trace's mean context (generate_config
takes the median ITL of ``vllm bench serve``, which the iteration time is up to
scheduling noise).

Per phase (requests by arrival) each policy's per-user tok/s, TPOT p50 and p99 and TTFT
p50 per replication, and the paired difference from the static table with its 95%
interval (> 0: the policy does better than the table).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.acceptance import RateClass
from sim.model.controllers import SGLangAdaptive, VllmGoodput
from sim.model.policy import FixedK, KTable, SpeculationPolicy
from sim.parallel import Executor
from sim.scenario.sections.bounds import MAX_RATE_PER_S, MAX_REQUESTS, MIN_RATE_PER_S
from sim.simulation.serving.lengths import Fixed
from sim.simulation.serving.metrics import Ratio, mean_interval, request_metrics
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.records import ServingRecord
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import Trace, Workload
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.best_k import best_k_table
from sim.studies.serving.evaluator import PointEvaluator, ScenarioPlans, study_settings
from sim.studies.serving.paired_metrics import METRICS, Load, paired_difference, ratio_doc

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

#: vLLM generate_config.py defaults: ``--batch-size-list 1 4 16 64 256``,
#: ``--num-speculative-tokens-list 1 3 5`` (K = 0 is the vanilla run).
VLLM_PROFILE_BATCHES: tuple[int, ...] = (1, 4, 16, 64, 256)
VLLM_PROFILE_K: tuple[int, ...] = (0, 1, 3, 5)
PHASE_METRICS: tuple[str, ...] = ("per_user_tok_s", "tpot_p50_ms", "tpot_p99_ms", "ttft_p50_ms")


@dataclass(frozen=True, slots=True)
class Phase:
    """``requests`` arriving at ``rate_per_s``, ``shares`` of each acceptance class."""

    requests: int
    rate_per_s: float
    shares: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        if self.requests < 1 or not 0 < self.rate_per_s < math.inf:
            raise ValueError("a phase needs at least one request and a finite positive rate")
        if self.requests > MAX_REQUESTS:
            raise ValueError(
                f"a phase has at most {MAX_REQUESTS:,} requests (workload.requests' limit), "
                f"got {self.requests:,}"
            )
        if not MIN_RATE_PER_S <= self.rate_per_s <= MAX_RATE_PER_S:
            raise ValueError(
                f"a phase's rate must be in [{MIN_RATE_PER_S:g}, {MAX_RATE_PER_S:g}] "
                f"requests/s, got {self.rate_per_s:g}"
            )
        names = [name for name, _ in self.shares]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"class {', '.join(map(repr, repeated))} given twice in one phase")
        total = sum(s for _, s in self.shares)
        if any(s < 0 for _, s in self.shares) or not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"class shares must be >= 0 and sum to 1, got {self.shares}")

    def label(self) -> str:
        mix = ", ".join(f"{s:.0%} {name}" for name, s in self.shares if s > 0)
        noun = "request" if self.requests == 1 else "requests"
        return f"{self.requests} {noun} at {self.rate_per_s:.3g}/s, {mix}"


def _interleave(shares: Sequence[float], n: int) -> list[int]:
    """Class of each of n requests so that after every request each class's count is
    within one of share x requests so far (largest remainder, lowest index on ties)."""
    counts = [0] * len(shares)
    out = []
    for i in range(1, n + 1):
        c = max(range(len(shares)), key=lambda j: (shares[j] * i - counts[j], -j))
        counts[c] += 1
        out.append(c)
    return out


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


def phase_trace(
    phases: Sequence[Phase],
    class_names: Sequence[str],
    input_tokens: int,
    output_tokens: int,
) -> tuple[Trace, np.ndarray]:
    """The trace of ``phases`` and each request's phase index (n,)."""
    times, classes, phase_of = [], [], []
    t = 0.0
    for p_i, phase in enumerate(phases):
        names = dict(phase.shares)
        unknown = sorted(set(names) - set(class_names))
        if unknown:
            raise SpecsimError(
                f"unknown acceptance class {unknown[0]!r} (the scenario has "
                f"{', '.join(class_names)})",
                param="phases",
            )
        shares = [names.get(c, 0.0) for c in class_names]
        gap = 1000.0 / phase.rate_per_s
        for c in _interleave(shares, phase.requests):
            times.append(t)
            classes.append(c)
            phase_of.append(p_i)
            t += gap
    n = len(times)
    trace = Trace(
        np.array(times),
        np.full(n, input_tokens, dtype=np.int64),
        np.full(n, output_tokens, dtype=np.int64),
        np.array(classes, dtype=np.int64),
        source="phases",
    )
    return trace, np.array(phase_of)


def vllm_profile(
    plan: ServingPlan, context_tokens: float, max_batch: int
) -> dict[int, dict[int, float]]:
    """ITL (ms) at vLLM's profiled batch sizes (those <= ``max_batch``, and
    ``max_batch`` itself) and K, from the plan's cost model at ``context_tokens`` per
    request, on the speculating server (K = 0 too: the server that profiles has its
    drafter loaded, so its plain iterations pay what its speculative ones pay for host
    work)."""
    sizes = sorted({b for b in VLLM_PROFILE_BATCHES if b <= max_batch} | {max_batch})
    return {
        b: {
            k: float(plan.cost.decode_ms(b, k, np.array([b * context_tokens]), drafter=True)[0])
            for k in VLLM_PROFILE_K
        }
        for b in sizes
    }


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


#: The static table's name (its policy's key and the reference of every advantage): chosen
#: by best k, or given with ``--k-table`` (then it is no best-k table).
BEST_K_TABLE = "best-k table"
GIVEN_TABLE = "given k table"


def standard_policies(
    plan: ServingPlan,
    table: KTable,
    ks: Sequence[int],
    initial_steps: int,
    context_tokens: float,
    table_name: str = BEST_K_TABLE,
) -> dict[str, SpeculationPolicy]:
    """Plain decoding, each fixed k, the static table (``table_name``: the best-k table,
    or ``GIVEN_TABLE`` for a table the user gave), SGLang adaptive (default config,
    starting at ``initial_steps``) and vLLM dynamic SD (offline table and online refresh)
    profiled on ``plan``; the plan's acceptance must cover k = 7 (SGLang's largest default
    candidate) and 5 (vLLM's profile)."""
    max_batch = plan.scheduler.max_running_requests
    rates = plan.acceptance.expected_cumulative()[1 : max(VLLM_PROFILE_K) + 1]
    stats = vllm_profile(plan, context_tokens, min(max_batch, max(VLLM_PROFILE_BATCHES)))
    top = max(stats)
    offline = VllmGoodput.of(rates, stats, top, refresh=False)
    out: dict[str, SpeculationPolicy] = {"plain decoding": FixedK(0)}
    out.update({f"k = {k}": FixedK(k) for k in ks})
    out[table_name] = table
    out["SGLang adaptive"] = SGLangAdaptive(initial_steps)
    out["vLLM DSD table"] = KTable(offline.static_table())
    out["vLLM DSD online"] = dataclasses.replace(offline, refresh=True)
    return out


def require_mix(plan: ServingPlan) -> tuple[RateClass, ...]:
    """The plan's acceptance classes, at least two of them (default phases swap the mix)."""
    classes = plan.acceptance.classes
    if len(classes) < 2:
        raise SpecsimError(
            "a phase-changing workload needs an [[acceptance.mix]] of at least two classes",
            param="phases",
        )
    return classes


def default_phases(plan: ServingPlan, one_user_req_s: float, requests: int) -> list[Phase]:
    """Four phases of ``requests``: 90% of the lowest-acceptance class (10% of the
    highest), then swapped, at about 4 users' worth of load, then both again at 16."""
    classes = require_mix(plan)
    order = sorted(classes, key=lambda c: float(np.mean(c.mean_rates)))
    low, high = order[0].name, order[-1].name
    out = []
    for users in (4, 16):
        rate = users * one_user_req_s
        out.append(Phase(requests, rate, ((low, 0.9), (high, 0.1))))
        out.append(Phase(requests, rate, ((low, 0.1), (high, 0.9))))
    return out


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
    from sim.studies.serving.draws import DRAW_REPLICATIONS, DrawnPoints
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
    return dataclasses.replace(
        result,
        versus_interval90=versus,
        switches=switches,
        intervals={
            **builder.sampled.doc(r),
            "draws_run": ran,
            "highest_measured_batch": top,
            "replay_max_batch": result.max_batch,
            "phase_decode_batches": list(result.phase_batches),
            **({"model_error": widest.doc()} if widest is not None else {}),
            **({"note": note} if note else {}),
        },
    )
