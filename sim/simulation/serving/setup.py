"""A scenario's ``[serving]`` and ``[workload]`` as a serving plan, its policies and SLOs.

What each key means is written once here (the cost model comes from
``sim.binding.serving_cost.serving_cost``); ``ServingSetup.assumptions`` says, for the report,
which inputs were given, which were defaulted and which were derived.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtri

from sim.binding.bound import Bound
from sim.binding.kv_capacity import KvCapacity, kv_capacity
from sim.binding.serving_model import serving_model
from sim.errors import SpecsimError
from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft, is_tree, max_beams, rank_width
from sim.model.pass_curves import PrefillLoad
from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy, k_lookup
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.overrides import with_load
from sim.scenario.schema import Scenario
from sim.scenario.sections.serving import ServingSpec
from sim.scenario.sections.workload import UNSTATED_PROMPTS, WorkloadSpec
from sim.simulation.serving.lengths import Empirical, Fixed, LengthDistribution, LogNormal
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.scheduler import SchedulerConfig, admission_cap
from sim.simulation.serving.traces import read_trace
from sim.simulation.serving.workload import ClosedLoop, Poisson, Tasks, Trace, Workload

if TYPE_CHECKING:  # only named here: the passes are built in sim/binding/serving_cost.py
    from sim.hardware.pass_terms import PassTerms

__all__ = [
    "BASELINE",
    "SPECULATIVE",
    "ServingSetup",
    "row_draft",
    "serving_setup",
    "with_load",
]

BASELINE, SPECULATIVE = "baseline", "speculative"
#: Quantile used as the default cap of a lognormal length (4 standard normal deviations
#: would be 0.99997; 0.9999 keeps the cap within ~3.7 sigma).
LOGNORMAL_CAP_QUANTILE = 0.9999


@dataclass(frozen=True, slots=True)
class ServingSetup:
    """Everything ``simulate_serving`` needs for a scenario, and what it assumed.

    ``draftings``: ``baseline`` (plain decoding) and, when the scenario speculates,
    ``speculative`` (its policy), each worked out and checked on the plan once
    (``ServingPlan.check``: what ``simulate_serving`` and the load check take);
    ``mean_tokens``: the requests' mean (input, output) tokens; ``load``: the arrival
    pattern in words; ``kv_capacity``: where the plan's KV capacity comes from (given,
    derived with its range, unlimited); ``max_beams``: the most drafter beams a request of
    any of its policies' trees drafts (1 without trees), which its cost was built for.
    """

    plan: ServingPlan
    draftings: dict[str, Drafting]
    slo: SloSpec
    replications: int
    seed: int
    load: str
    assumptions: tuple[str, ...]
    mean_tokens: tuple[float, float]
    kv_capacity: KvCapacity | None = None
    max_beams: int = 1

    @property
    def speculates(self) -> bool:
        """Whether any policy run drafts (its cost then holds the drafter's passes)."""
        return any(d.policy.max_k > 0 for d in self.draftings.values())

    @property
    def policies(self) -> dict[str, SpeculationPolicy]:
        """The policies run, by name (each ``draftings`` entry's policy)."""
        return {name: d.policy for name, d in self.draftings.items()}


def _resolve(path: str, base_dir: Path | None) -> Path:
    p = Path(path)
    return p if p.is_absolute() or base_dir is None else base_dir / p


def _lognormal(mean: int, sigma: float, cap: int | None, low: int) -> LogNormal:
    if cap is None:
        mu = math.log(mean) - sigma**2 / 2
        cap = max(mean, math.ceil(math.exp(mu + sigma * ndtri(LOGNORMAL_CAP_QUANTILE))))
    return LogNormal(float(mean), sigma, cap, min_tokens=low)


def _lengths(
    w: WorkloadSpec, base_dir: Path | None, notes: list[str]
) -> tuple[LengthDistribution, LengthDistribution]:
    n_in = w.input_tokens or 0
    if w.prompts_unstated:
        notes.append(UNSTATED_PROMPTS)
    if w.lengths in (None, "fixed"):
        notes.append(f"lengths: fixed, {n_in} prompt and {w.output_tokens} output tokens")
        return Fixed(n_in), Fixed(w.output_tokens)
    if w.lengths == "lognormal":
        assert w.output_sigma is not None
        out = _lognormal(w.output_tokens, w.output_sigma, w.output_max_tokens, 1)
        inp: LengthDistribution = (
            _lognormal(n_in, w.input_sigma or 0.0, w.input_max_tokens, 1) if n_in else Fixed(0)
        )
        notes.append(
            f"lengths: lognormal, means {n_in} / {w.output_tokens} tokens, caps "
            f"{inp.max_tokens} / {out.max_tokens}"
            + ("" if w.output_max_tokens else f" (default: the {LOGNORMAL_CAP_QUANTILE} quantile)")
        )
        return inp, out
    assert w.lengths_trace is not None
    trace = read_trace(_resolve(w.lengths_trace, base_dir)).trace
    notes.append(
        f"lengths: empirical marginals of {trace.size} row{'s' * (trace.size != 1)} of "
        f"{w.lengths_trace} "
        "(input and output drawn independently)"
    )
    return (
        Empirical(tuple(trace.input_tokens.tolist())),
        Empirical(tuple(trace.output_tokens.tolist())),
    )


def row_draft(num_steps: int, topk: int, num_draft_tokens: int) -> Draft:
    """A ``serving.draft_table`` row's draft: a chain when topk is 1 (SGLang then verifies
    num_steps + 1 tokens whatever num_draft_tokens says), else SGLang's tree."""
    return num_steps if topk == 1 else TreeDraft(num_steps, topk, num_draft_tokens)


def _policy(bound: Bound, serving: ServingSpec, source: str) -> SpeculationPolicy:
    """The scenario's own policy over the draft bind decided (``Bound.drafting``): plain
    above a batch, a table by batch, or its draft at every batch."""
    scenario, k = bound.scenario, bound.num_steps
    draft = bound.drafting.draft
    if serving.disable_above_batch is not None:
        return DisableAbove(draft, serving.disable_above_batch)
    if serving.k_table is not None:
        if scenario.speculation.is_tree:
            raise SpecsimError(
                "k_table rows are chain lengths; a tree scenario's table is serving.draft_table "
                "([start_bs, end_bs, num_steps, topk, num_draft_tokens] rows)",
                source=source,
                field="serving.k_table",
            )
        return KTable(tuple((a, b, min(kk, k)) for a, b, kk in serving.k_table))
    if serving.draft_table is not None:
        return KTable(tuple((a, b, row_draft(s, t, n)) for a, b, s, t, n in serving.draft_table))
    return FixedK(draft)


def _widest(drafts: list[Draft]) -> tuple[int, int]:
    """(the most ranks, the most drafter beams per request) any of ``drafts``' trees need
    (1, 1 without trees)."""
    trees = [d for d in drafts if is_tree(d)]
    return max(map(rank_width, trees), default=1), max(map(max_beams, trees), default=1)


def _arrivals(
    bound: Bound, serving: ServingSpec, base_dir: Path | None, notes: list[str]
) -> tuple[ClosedLoop | Poisson | Trace, str]:
    """The scenario's arrivals (a trace, Poisson or a closed loop) and the load in words."""
    if serving.trace is not None:
        names = bound.acceptance.class_names if bound.num_steps else ()
        window = serving.trace_window_s
        read = read_trace(
            _resolve(serving.trace, base_dir),
            names,
            fmt=serving.trace_format,
            rate_scale=serving.trace_rate_scale,
            window_s=(window[0], window[1]) if window is not None else None,
        )
        trace = read.trace
        notes.extend(read.notes)
        load = (
            f"trace {serving.trace} ({'' if read.fmt == 'specsim' else read.fmt + ' format, '}"
            f"{trace.size} "
            f"request{'s' * (trace.size != 1)})"
        )
        return trace, load
    if serving.rate_per_s is not None:
        return Poisson(serving.rate_per_s), f"Poisson arrivals at {serving.rate_per_s:g} requests/s"
    users = serving.concurrency or 1
    load = f"closed loop of {users} user{'s' if users > 1 else ''}" + (
        f", think time {serving.think_time_ms:g} ms" if serving.think_time_ms else ""
    )
    if serving.concurrency is None:
        notes.append("load: no serving.concurrency, rate_per_s or trace given; one user")
    return ClosedLoop(users, serving.think_time_ms), load


def _trace_workload(
    scenario: Scenario, arrivals: Trace, trace_name: str | None, source: str, notes: list[str]
) -> tuple[Workload, str | None]:
    """A trace's workload (its rows' lengths; ``--requests`` replays its first rows) and
    the load in words when only the first rows are replayed."""
    w = scenario.workload
    warmup = w.warmup_requests if w.warmup_requests is not None else arrivals.size // 10
    if warmup >= arrivals.size:
        raise SpecsimError(
            f"warmup_requests ({warmup}) leaves none of the trace's {arrivals.size} "
            f"request{'s' * (arrivals.size != 1)}",
            source=source,
            field="workload.warmup_requests",
        )
    rows = arrivals.size
    load = None
    overrides = scenario.origins.overrides
    if "workload.requests" in overrides:  # --requests, --set: the first rows
        requests = w.requests
        if warmup + requests > rows:
            raise SpecsimError(
                f"{requests} measured requests after {warmup} warm-up need "
                f"{warmup + requests} rows; the trace {trace_name} has {rows}",
                source=overrides["workload.requests"],
                field="workload.requests",
            )
        arrivals = arrivals.head(warmup + requests)
        load = f"trace {trace_name} (the first {arrivals.size} of its {rows} requests)"
        notes.append(
            f"lengths: from the trace; {warmup} warm-up and {requests} measured requests: "
            f"the trace's first {arrivals.size} of {rows} rows replayed (workload.requests "
            f"set by {overrides['workload.requests']})"
        )
    else:
        requests = rows - warmup
        notes.append(f"lengths: from the trace; {warmup} warm-up and {requests} measured requests")
        if "workload.requests" in scenario.origins.given:
            notes.append(
                f"requests: workload.requests ({w.requests}) does not apply to a trace: "
                "every row is replayed (--requests N replays its first warm-up + N rows)"
            )
    # the lengths come from the rows: the workload's distributions are unused
    return Workload(arrivals, Fixed(1), Fixed(0), requests=requests, warmup=warmup), load


def _ordered_workload(
    scenario: Scenario,
    arrivals: ClosedLoop | Poisson | Trace,
    class_names: tuple[str, ...],
    base_dir: Path | None,
    source: str,
    notes: list[str],
) -> tuple[Workload, str]:
    """``lengths = 'ordered'``: the closed loop's users as a job over the rows of
    ``lengths_trace`` in file order (``--requests N``: its first N rows), measured whole;
    the workload's length distributions are the rows' marginals (their means and bounds:
    what the studies read), the requests the rows themselves. The load in words."""
    w = scenario.workload
    if not isinstance(arrivals, ClosedLoop):
        given = "serving.trace" if isinstance(arrivals, Trace) else "serving.rate_per_s"
        raise SpecsimError(
            f"'ordered' replays a closed-loop job (serving.concurrency users); {given} gives "
            "open arrivals: use lengths = 'empirical' with them",
            source=source,
            field="workload.lengths",
        )
    assert w.lengths_trace is not None
    tasks = Tasks.of_trace(read_trace(_resolve(w.lengths_trace, base_dir), class_names).trace)
    rows = tasks.size
    overrides = scenario.origins.overrides
    if "workload.requests" in overrides:  # --requests, --set: the first rows
        if w.requests > rows:
            raise SpecsimError(
                f"{w.requests} requests need {w.requests} tasks; {w.lengths_trace} has {rows}",
                source=overrides["workload.requests"],
                field="workload.requests",
            )
        tasks = tasks.head(w.requests)
    elif "workload.requests" in scenario.origins.given:
        notes.append(
            f"requests: workload.requests ({w.requests}) does not apply to an ordered job: "
            "every row is sent (--requests N sends its first N)"
        )
    n = tasks.size
    notes.append(
        f"lengths: ordered, the {n} tasks of {w.lengths_trace} in file order "
        f"({'all' if n == rows else f'the first {n} of {rows}'} rows; mean "
        f"{float(tasks.input_tokens.mean()):.1f} prompt and "
        f"{float(tasks.output_tokens.mean()):.1f} output tokens); the job measured whole, "
        "from its first request to its last answer (no warm-up)"
    )
    job = ClosedLoop(arrivals.users, arrivals.think_ms, n, 1, tasks)
    workload = Workload(
        job,
        Empirical(tuple(tasks.output_tokens.tolist())),
        Empirical(tuple(tasks.input_tokens.tolist())),
        requests=n,
        warmup=0,
    )
    users = f"{arrivals.users} user{'s' * (arrivals.users != 1)}"
    think = f", think time {arrivals.think_ms:g} ms" if arrivals.think_ms else ""
    return workload, f"job of {n} tasks of {w.lengths_trace} in order, {users}{think}"


def _workload(
    scenario: Scenario,
    arrivals: ClosedLoop | Poisson | Trace,
    base_dir: Path | None,
    source: str,
    notes: list[str],
) -> tuple[Workload, str | None]:
    """The requests of ``arrivals``: lengths, measured and warm-up counts (and the load in
    words when a trace is cut to its first rows)."""
    if isinstance(arrivals, Trace):
        trace_name = scenario.serving.trace if scenario.serving is not None else None
        return _trace_workload(scenario, arrivals, trace_name, source, notes)
    w = scenario.workload
    inp, out = _lengths(w, base_dir, notes)
    warmup = w.warmup_requests
    if warmup is None:
        users = arrivals.users if isinstance(arrivals, ClosedLoop) else 0
        warmup = max(users, w.requests // 10)
        notes.append(
            f"warm-up: {warmup} {'request' if warmup == 1 else 'requests'} discarded (default)"
        )
    return Workload(arrivals, out, inp, requests=w.requests, warmup=warmup), None


def _draft_notes(drafts: list[Draft], serving: ServingSpec, speculates: bool) -> list[str]:
    """What the policies' drafts assume: static trees, SGLang's trees, the draft extend."""
    notes = []
    if any(isinstance(d, Tree) for d in drafts):
        notes.append(
            "static tree: verified as given every iteration; per iteration the drafter runs "
            "one pass per level below the first over batch x the nodes drafted so far (vLLM's "
            "propose_tree) and the verify covers batch x its nodes (tree mask timed as a "
            "causal verify); acceptance per request from its own top-1 rates through the tree"
        )
    if any(isinstance(d, TreeDraft) for d in drafts):
        notes.append(
            "trees: the tree SGLang's beam search builds at the population's mean rank rates "
            "(static, as in the batch-1 engines); per iteration the drafter runs num_steps - 1 "
            "passes over batch x topk beams and the verify covers batch x num_draft_tokens "
            "tokens (tree mask timed as a causal verify); acceptance per request from its own "
            "top-1 rates through the tree"
        )
    if speculates:
        notes.append(
            "draft extend: over each request's accepted path (serving.draft_extend = "
            "'accepted', default; SGLang's eager extend and vLLM's proposer)"
            if serving.draft_extend == "accepted"
            else "draft extend: padded to the verify's width per request (serving.draft_extend "
            "= 'padded': SGLang's CUDA-graphed draft extend)"
        )
    return notes


def _check_policies(
    plan: ServingPlan,
    lookups: Mapping[str, tuple[SpeculationPolicy, list[Draft]]],
    serving: ServingSpec,
    source: str,
) -> dict[str, Drafting]:
    """Each policy (with its ``k_lookup``) worked out on ``plan``; SpecsimError naming
    the field to change when one cannot run on it."""
    draftings = {}
    for name, (policy, by_batch) in lookups.items():
        try:
            draftings[name] = plan.check(policy, by_batch)
        except ValueError as exc:
            text = str(exc)
            if "KV cache" in text:
                field = "serving.kv_capacity_tokens"
            elif "ranks have rates" in text:
                field = "serving.draft_table" if serving.draft_table else "acceptance.rank_rates"
            else:
                field = "serving.token_budget"
            raise SpecsimError(f"{text} ({name})", source=source, field=field) from None
    return draftings


def serving_setup(
    bound: Bound,
    *,
    base_dir: Path | None = None,
    source: str = "scenario",
    policies: Mapping[str, SpeculationPolicy] | None = None,
    terms: PassTerms | None = None,
) -> ServingSetup:
    """The serving plan of the bound scenario (``base_dir``: where relative trace paths
    start; ``source``: the name errors give the scenario). ``policies``: run these (by
    name) beside the baseline instead of the scenario's own policy (a study comparing
    drafts: the plan then covers every depth, width and lookahead they use). The batched
    cost, acceptance, rank shares and KV capacity are the bound scenario's serving model
    (sim/binding/serving_model.py ``serving_model``), built here once; ``terms``: the token-count
    terms its passes share with the other setups of a study (sim/hardware/batched.py
    ``PassTerms``; None: a table of this setup's own)."""
    scenario = bound.scenario
    serving = scenario.serving or ServingSpec()
    notes: list[str] = []
    arrivals, load = _arrivals(bound, serving, base_dir, notes)
    cut: str | None
    if scenario.workload.lengths == "ordered":
        names = bound.acceptance.class_names if bound.num_steps else ()
        workload, cut = _ordered_workload(scenario, arrivals, names, base_dir, source, notes)
    else:
        workload, cut = _workload(scenario, arrivals, base_dir, source, notes)
    mean_tokens = _mean_tokens(workload)
    run = {BASELINE: FixedK(0), **(policies or {})}
    if policies is None and scenario.num_steps > 0:
        run[SPECULATIVE] = _policy(bound, serving, source)
    speculates = any(p.max_k > 0 for p in run.values())
    try:
        capacity = kv_capacity(scenario, speculates)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=source, field=exc.field) from None
    caps = _admission_caps(serving, capacity)
    lookups = {n: (p, k_lookup(p, admission_cap(p, *caps))) for n, p in run.items()}
    drafts = [d for _, by_batch in lookups.values() for d in dict.fromkeys(by_batch[1:])]
    notes.extend(_draft_notes(drafts, serving, speculates))
    widest, beams = _widest(drafts)
    served = serving_model(
        bound,
        speculative=speculates,
        max_beams=beams,
        max_k=max(p.max_k for p in run.values()),
        widest=widest,
        source=source,
        capacity=capacity,
        terms=terms,
    )
    notes.extend(served.notes)
    if mean_tokens[0] > 0 and serving.prefill == "model":
        _check_prefill(served.cost, speculates, source)
    if scenario.timing.jitter_cv:
        notes.append(
            f"timing.jitter_cv = {scenario.timing.jitter_cv:g} is not applied: serving "
            "iteration times are deterministic given the batch (jitter is a batch-1 Monte "
            "Carlo setting)"
        )
    scheduler = SchedulerConfig(
        max_running_requests=caps[0],
        batching=serving.batching,
        token_budget=serving.token_budget,
        kv_capacity_tokens=served.kv.tokens,
        prefill=serving.prefill,
        plain_kv_capacity_tokens=served.kv.plain,
        max_running_requests_speculative=caps[1],
        pooled_state=served.kv.state,
        kv_block_tokens=served.kv.blocks(True),
        plain_kv_block_tokens=served.kv.blocks(False),
    )
    plan = ServingPlan(
        workload,
        scheduler,
        served.cost,
        served.acceptance,
        rank_shares=served.rank_shares,
        draft_extend=serving.draft_extend,
    )
    return ServingSetup(
        plan=plan,
        draftings=_check_policies(plan, lookups, serving, source),
        slo=SloSpec(tuple(scenario.target_tok_s), serving.ttft_slo_ms, serving.tpot_slo_ms),
        replications=scenario.simulation.replications,
        seed=scenario.simulation.seed,
        load=cut or load,
        assumptions=tuple(notes),
        mean_tokens=mean_tokens,
        kv_capacity=served.kv,
        max_beams=beams,
    )


def _check_prefill(cost: IterationCost, drafter: bool, source: str) -> None:
    """Price a one-token prefill once, so that a prefill the scenario cannot price (an
    ungraphed pass without ``model.kernels_per_layer``) is refused here, naming the
    scenario's ``source``, before any run rather than from inside one."""
    try:
        cost.prefill_ms(PrefillLoad.of_chunks([1], [0]), drafter)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=source, field=exc.field) from None


def _admission_caps(serving: ServingSpec, capacity: KvCapacity) -> tuple[int, int | None]:
    """The admission caps, plain and speculating (None: the plain one's): the scenario's,
    each bounded by the running requests whose states SGLang's state pool holds on that
    server (a hybrid target under SGLang's rule: sim/binding/kv_capacity.py
    ``KvCapacity.running``)."""
    caps = (serving.max_running_requests, serving.max_running_requests_speculative)
    plain, spec = capacity.running(False), capacity.running(True)
    if plain is None or spec is None:
        return caps
    return min(caps[0], plain), min(caps[1] or caps[0], spec)


def _mean_tokens(workload: Workload) -> tuple[float, float]:
    """Mean (input, output) tokens of the workload's requests (a trace's: its rows')."""
    arrivals = workload.arrivals
    if isinstance(arrivals, Trace):
        return float(np.mean(arrivals.input_tokens)), float(np.mean(arrivals.output_tokens))
    return workload.input_tokens.mean, workload.output_tokens.mean
