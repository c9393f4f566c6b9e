"""Running policies at loads: plan builders and a memoizing evaluator.

A ``PlanBuilder`` turns (load, num_steps) into a ``ServingPlan``. ``ScenarioPlans`` does it
the way ``sweep`` does for a serving point: the scenario with ``serving.concurrency`` (or
``serving.rate_per_s``) and ``speculation.num_steps`` overridden, then
``serving_setup`` (sim/simulation/serving/setup.py), so a study's point and the sweep's
point at the same fields and seed are the same simulation.

``PointEvaluator`` runs (load, policy) pairs at one seed and number of replications and
keeps every result, so studies that revisit a load (bisection, band inversion, several
metrics, several k) never run it twice; the baseline (k = 0) of a load is one run shared by
every k. Batches of new points run through the one executor (sim/parallel.py), each point
in one process with its own seed: results never depend on the worker count.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from sim.binding.bound import bind
from sim.errors import SpecsimError
from sim.hardware.pass_terms import PassTerms
from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy
from sim.parallel import Executor, LocalExecutor, longest_first
from sim.scenario.overrides import pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.setup import ServingSetup, serving_setup
from sim.simulation.serving.simulate import replication_blocks, simulate_serving, work_out
from sim.simulation.serving.stability import LoadCheck, ServiceBound, service_bound
from sim.studies.serving.paired_metrics import Load, PolicyPoint, policy_point
from sim.studies.serving.sequential import FIRST, Band, Points, Rule, merge
from sim.uncertainty.model_error import ModelErrorTerm, model_error_term
from sim.uncertainty.perturb import InputDraws, Overrides

__all__ = [
    "BASELINE",
    "PlanBuilder",
    "PointEvaluator",
    "PointTask",
    "ScenarioPlans",
    "gain_band",
    "load_term",
    "plan_steps",
    "replications_of",
    "run_in_blocks",
    "run_point",
    "run_points",
    "same_point",
]

#: The plain-decoding policy every gain is measured against.
BASELINE = FixedK(0)
#: Keys of the scenario's serving section that the decision studies set themselves: the
#: load and the speculation policy.
STUDY_KEYS: tuple[str, ...] = (
    "concurrency",
    "rate_per_s",
    "trace",
    "trace_format",
    "trace_rate_scale",
    "trace_window_s",
    "k_table",
    "disable_above_batch",
)


class PlanBuilder(Protocol):
    """(load, num_steps) -> the serving plan; ``default_steps``: the plan the baseline
    runs on (any k gives the baseline the same records; the scenario's own k is used)."""

    @property
    def default_steps(self) -> int: ...

    def __call__(self, load: Load, num_steps: int) -> ServingPlan: ...


def plan_steps(policy: SpeculationPolicy, builder: PlanBuilder) -> int:
    """The num_steps of the plan a policy runs on: its largest k (the baseline's: the
    builder's default)."""
    return policy.max_k if policy.max_k > 0 else builder.default_steps


@dataclass(frozen=True, slots=True)
class ScenarioPlans:
    """Plans of a scenario at any load and k (picklable: the scenario as a mapping).

    ``base`` is the scenario's mapping with its verify tokens pinned (the measured verify
    stays the measured one at every k, as in search and sweep) and without its own load,
    k table or disable threshold (the studies set the load and choose the policy).
    ``base_dir``: where the scenario's relative paths (an empirical lengths trace) start.
    ``model_error``: the scenario's model-error term, read once from it (at batch 1; a
    study's answer takes it at its own batch, ``ModelErrorTerm.at``).
    """

    base: dict[str, Any]
    model_error: ModelErrorTerm
    source: str = "scenario"
    base_dir: str | None = None
    #: Overrides of one draw of the uncertain inputs (sim/studies/serving/draws.py),
    #: applied at every load and k; empty: the scenario as given.
    drawn: tuple[tuple[str, Any], ...] = ()
    #: The uncertain inputs a study's intervals draw, their draws (each a ``drawn``) and
    #: what those were conditioned on, made once from the bound scenario as loaded
    #: (sim/uncertainty/perturb.py ``input_draws``); empty: none.
    sampled: InputDraws = field(default_factory=InputDraws)
    #: The token-count terms of every plan's passes (sim/hardware/pass_terms.py
    #: ``PassTerms``): the plans of a study at each load and k meet the same prompt
    #: lengths again. Pickled as its owner's name: a worker's tasks share one table.
    terms: PassTerms = field(default_factory=PassTerms, compare=False, repr=False)

    @staticmethod
    def of(
        scenario: Scenario, *, source: str = "scenario", base_dir: str | Path | None = None
    ) -> ScenarioPlans:
        if scenario.num_steps < 1 or scenario.acceptance is None:
            raise SpecsimError(
                "the scenario does not speculate (speculation.num_steps 0 or no [acceptance]): "
                "nothing to compare with plain decoding",
                source=source,
                field="speculation.num_steps",
            )
        if scenario.speculation.is_tree:
            # the studies vary a chain's k (FixedK(k)): on a tree scenario they ran chains of
            # its top-1 rates without a word, and refused a k the tree cannot have
            sp, field = scenario.speculation, "speculation.topk"
            raise SpecsimError(
                f"{sp.topk}: the scenario drafts a tree ({sp.num_steps}/{sp.topk}/"
                f"{sp.num_draft_tokens}), and crossover, best-k, capacity and controllers "
                "compare chains of k drafts with plain decoding: compare the tree with "
                "`specsim tree-load` or `specsim serve`, or study chains of its top-1 rates "
                "with --set speculation.topk=1",
                source=f"{source} ({via})"
                if (via := scenario.origins.overrides.get(field))
                else source,
                field=field,
            )
        raw = pin_verify_tokens(scenario).model_dump(exclude_none=True)
        raw = copy.deepcopy(raw)
        for key in STUDY_KEYS:
            raw.get("serving", {}).pop(key, None)
        return ScenarioPlans(
            raw,
            model_error_term(scenario, 1.0),
            source,
            None if base_dir is None else str(base_dir),
        )

    @property
    def default_steps(self) -> int:
        return int(self.base["speculation"]["num_steps"])

    @property
    def draws(self) -> tuple[Overrides, ...]:
        """The draws a study's intervals take (``sampled``'s overrides; empty: none)."""
        return self.sampled.overrides

    @property
    def conditioning(self) -> dict[str, Any] | None:
        """What the draws were conditioned on (``sampled``'s; None: nothing)."""
        return self.sampled.conditioning

    def scenario(self, load: Load | None, num_steps: int) -> Scenario:
        """The base scenario at ``load`` (None: its own) and ``num_steps``."""
        base = scenario_from_dict(self.base, source=self.source)
        over: dict[str, Any] = {**dict(self.drawn), "speculation.num_steps": num_steps}
        if load is not None:
            over.update(load.overrides())
        return with_overrides(base, over, source=self.source)

    def setup(self, load: Load | None, num_steps: int) -> ServingSetup:
        base_dir = Path(self.base_dir) if self.base_dir else None
        return serving_setup(
            bind(self.scenario(load, num_steps), self.terms.passes),
            base_dir=base_dir,
            source=self.source,
            terms=self.terms,
        )

    def __call__(self, load: Load, num_steps: int) -> ServingPlan:
        return self.setup(load, num_steps).plan


@dataclass(frozen=True, slots=True)
class PointTask:
    """One policy at one load (picklable): replications ``first`` to ``first +
    replications - 1`` of the seed."""

    builder: PlanBuilder
    load: Load
    policy: SpeculationPolicy
    replications: int
    seed: int
    slo: SloSpec
    keep_samples: bool = False
    first: int = 0


def run_point(
    task: PointTask,
    executor: Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PolicyPoint:
    """Simulate one task: its replications in this process, or through ``executor``
    (identical results); ``progress(done, total)`` after each replication."""
    plan = task.builder(task.load, plan_steps(task.policy, task.builder))
    try:
        run = simulate_serving(
            plan,
            work_out(plan, {"policy": task.policy}),
            replications=task.replications,
            seed=task.seed,
            executor=executor,
            progress=progress,
            first=task.first,
            delivery_gaps=False,  # a point's metrics read no ITL (``policy_point``)
        )
    except ValueError as exc:  # a policy the plan cannot run (KV, token budget)
        raise SpecsimError(f"{task.policy.describe()} at {task.load.label()}: {exc}") from None
    return policy_point(run.records["policy"], task.slo, task.keep_samples)


def run_points(tasks: Sequence[PointTask]) -> list[PolicyPoint]:
    """``run_point`` of each task in turn, in this process: one unit of a pool's work.
    A drawn scenario binds physics of its own (kernels per layer, expert skew), whose
    pass terms every prompt length computes again in each process that meets it
    (sim/hardware/pass_terms.py ``PassTerms``): its points sent as one unit compute them in
    one worker instead of in every one (``DrawnPoints.ensure``). The points are those
    each task gives alone (every replication carries its own seed)."""
    return [run_point(task) for task in tasks]


def same_point(load: Load, policy: SpeculationPolicy) -> SpeculationPolicy:
    """The fixed k whose point ``policy``'s is at ``load``, or ``policy`` itself.

    A closed loop of C users decodes at most C requests together, so an engine form (a k
    table, a threshold) that drafts the same chain of k at every batch 1..C, k its own
    largest (its plan is the fixed k's: ``plan_steps``), makes every decision the fixed
    k makes, on the same plan and seed: the same simulation, replication by replication
    (tested). Rates (a batch without a bound), fixed k and adaptive controllers (whose
    k follows more than the batch) are their own."""
    if not load.integer or not isinstance(policy, KTable | DisableAbove):
        return policy
    drafts = {policy.k_for_batch(b) for b in range(1, int(load.value) + 1)}
    if len(drafts) != 1:
        return policy
    (k,) = drafts
    if not isinstance(k, int) or k != policy.max_k:
        return policy
    return FixedK(k)


Key = tuple[Load, SpeculationPolicy]


def replications_of(task: PointTask) -> int:
    """A task's cost as ``longest_first`` orders a batch: its replications (one
    replication of a study's points costs within a factor of about 2 at every load and k,
    docs/study-speed.md)."""
    return task.replications


def run_in_blocks(
    executor: Executor,
    tasks: Sequence[PointTask],
    width: int,
    block_done: Callable[[int], None] | None = None,
) -> list[PolicyPoint]:
    """Each task's point, its replications cut into blocks for ``width`` workers
    (sim/simulation/serving/simulate.py ``replication_blocks``), every block of every task
    sent together, longest first, and each task's blocks merged in order: the point run
    whole (every replication its own seed). ``block_done(replications)`` as each block
    finishes."""
    blocks = [
        (t, replace(task, first=task.first + lo, replications=hi - lo))
        for t, task in enumerate(tasks)
        for lo, hi in replication_blocks(task.replications, width)
    ]
    parts: dict[int, PolicyPoint] = {}
    sent = [blk for _, blk in blocks]
    for b, point in longest_first(executor, run_point, sent, replications_of):
        parts[b] = point
        if block_done is not None:
            block_done(sent[b].replications)
    return [
        functools.reduce(merge, [parts[b] for b, (owner, _) in enumerate(blocks) if owner == t])
        for t in range(len(tasks))
    ]


class PointEvaluator:
    """Memoized (load, policy) -> ``PolicyPoint`` at one seed and replication count.

    ``progress(done, total)`` is called as each batch's points finish, and while points
    run step by step (a bisection's steps: ``ensure(..., step=True)`` and single points)
    as each of their replications finishes, with the replications run so far since the
    last batch out of the most a study announced with ``expect`` (a bisection's bound), or
    this step's own when it runs past it; ``runs`` counts the (load, policy) points run and
    ``replications_run`` their replications. ``keep_samples``: loads whose points keep
    pooled latency samples.
    ``check(load, policies)``: whether an open load is above what a policy answers
    (sim/simulation/serving/stability.py), which a study asks before simulating a rate: a
    point above its policy's bound has no steady state to measure.

    ``rule`` (sim/studies/serving/sequential.py): sequential replications. Every point
    runs ``first`` replications; then, for every point a call asked for, the rule says
    from all the points run at its load whether its comparisons are settled, and the
    points that are not run the rest up to ``replications`` (one batch, decided before
    any of it runs). None, or ``first`` >= ``replications``: every point runs all of them.
    ``early``: counts below ``first`` (increasing, >= 2) at which the rule is asked first
    (sim/studies/serving/sequential.py ``settled_se``: a stricter bound on fewer values):
    points run ``early[0]``, those not settled grow to the next look, and so on to
    ``first`` and then ``replications``, each look one batch.

    ``same(load, policy)``: the policy whose point ``policy``'s is at ``load``, the same
    simulation (``same_point``: an engine form that drafts one fixed k at every batch the
    load can reach); such a point is that policy's, run once and kept under both keys
    (``runs`` and ``replications_run`` count it once). None: every policy its own.
    """

    def __init__(
        self,
        builder: PlanBuilder,
        *,
        replications: int,
        seed: int,
        slo: SloSpec | None = None,
        executor: Executor | None = None,
        progress: Callable[[int, int | None], None] | None = None,
        keep_samples: Iterable[Load] = (),
        rule: Rule | None = None,
        first: int = FIRST,
        same: Callable[[Load, SpeculationPolicy], SpeculationPolicy] | None = None,
        early: Sequence[int] = (),
    ):
        if replications < 1:
            raise SpecsimError(f"must be >= 1, got {replications}", param="replications")
        early = tuple(int(n) for n in early)
        if any(n < 2 for n in early) or list(early) != sorted(set(early)):
            raise ValueError(f"early looks must increase from 2, got {early}")
        self.builder = builder
        self.replications = replications
        self.seed = seed
        self.slo = slo or SloSpec()
        self.executor = executor or LocalExecutor(1)
        self.progress = progress
        self.keep_samples = set(keep_samples)
        self.rule = rule
        self.first = first
        self.early = tuple(n for n in early if n < first)
        self.same = same
        self.memo: dict[Key, PolicyPoint] = {}
        #: Keys whose point is another key's (``same``): key -> the key run.
        self.aliases: dict[Key, Key] = {}
        self.bounds: dict[Key, ServiceBound] = {}
        #: Points whose other replications ``complete`` ran (a study reads its answer
        #: again when this grows).
        self.completed = 0
        self._one_by_one = 0  # replications run step by step since the last batch
        self._planned = 0  # the most replications those steps run (``expect``)
        #: The rule's answers, by (key, the points at its load with their replications):
        #: a rule reads only those points, and a point's replications fix its values
        #: (each its own seed), so an answer holds until a point at the load grows or
        #: joins it. Kept for ``_rule_of`` (the rule they are answers of).
        self._answers: dict[tuple[Key, frozenset[tuple[SpeculationPolicy, int]]], bool] = {}
        self._rule_of: Rule | None = None

    @property
    def runs(self) -> int:
        return len(self.memo) - len(self.aliases)

    @property
    def replications_run(self) -> int:
        return sum(p.replications for key, p in self.memo.items() if key not in self.aliases)

    def _canonical(self, key: Key) -> Key:
        """The key whose simulation ``key``'s point is (``same``)."""
        if self.same is None:
            return key
        load, policy = key
        return (load, self.same(load, policy))

    def _share(self) -> None:
        """Every aliased key holds its run key's point (as it is now)."""
        for key, run in self.aliases.items():
            self.memo[key] = self.memo[run]

    @property
    def sequential(self) -> bool:
        """Whether points stop at ``first`` replications where the rule allows."""
        return self.rule is not None and self.first < self.replications

    def bound(self, load: Load, policy: SpeculationPolicy) -> ServiceBound | None:
        """The most requests a second ``policy`` answers on the plan at ``load`` (None for
        a closed loop, which is always stable; computed once, nothing simulated)."""
        if load.integer:
            return None
        key = (load, policy)
        if key not in self.bounds:
            plan = self.builder(load, plan_steps(policy, self.builder))
            self.bounds[key] = service_bound(plan, plan.drafting(policy))
        return self.bounds[key]

    def check(self, load: Load, policies: Mapping[str, SpeculationPolicy]) -> LoadCheck | None:
        """The rate of ``load`` against each policy's bound (by name); None for a closed
        loop."""
        if load.integer:
            return None
        found = {name: self.bound(load, p) for name, p in policies.items()}
        return LoadCheck(float(load.value), {n: b for n, b in found.items() if b is not None})

    def stable(self, load: Load, policy: SpeculationPolicy) -> bool:
        """False when ``load`` is a rate above ``policy``'s bound."""
        b = self.bound(load, policy)
        return b is None or float(load.value) <= b.rate_per_s

    def _task(self, load: Load, policy: SpeculationPolicy, first: int, count: int) -> PointTask:
        return PointTask(
            self.builder,
            load,
            policy,
            count,
            self.seed,
            self.slo,
            load in self.keep_samples,
            first,
        )

    def rest_task(
        self, load: Load, policy: SpeculationPolicy, have: int, upto: int | None = None
    ) -> PointTask:
        """The task that runs a point's replications after its first ``have`` up to
        ``upto`` (default: all of them), merged onto them with
        sim/studies/serving/sequential.py ``merge``."""
        end = self.replications if upto is None else min(upto, self.replications)
        return self._task(load, policy, have, end - have)

    def ensure(self, keys: Sequence[Key], *, step: bool = False) -> None:
        """Run every (load, policy) not yet run, in parallel through the executor; with a
        ``rule``, then the rest of the replications of those of ``keys`` not settled.
        ``step``: a bisection's step (its replications count against ``expect``'s
        bound) rather than a batch of its own."""
        keys = list(dict.fromkeys(keys))
        runs = {key: self._canonical(key) for key in keys}
        self.aliases.update({key: run for key, run in runs.items() if key != run})
        missing = [k for k in dict.fromkeys(runs.values()) if k not in self.memo]
        looks = [*self.early, self.first] if self.sequential else [self.replications]
        self._run([self._task(load, p, 0, looks[0]) for load, p in missing], step)
        self._share()
        if not self.sequential:
            return
        assert self.rule is not None
        for target in [*looks[1:], self.replications]:
            at: dict[Load, dict[SpeculationPolicy, PolicyPoint]] = {}
            for (load, p), point in self.memo.items():
                at.setdefault(load, {})[p] = point
            grow = dict.fromkeys(
                runs[(load, p)]
                for load, p in keys
                if self.memo[(load, p)].replications < target
                and not self._settled(at[load], (load, p))
            )
            tasks = [
                self.rest_task(load, p, self.memo[(load, p)].replications, target)
                for load, p in grow
            ]
            self._run(tasks, step)
            self._share()

    def _settled(self, points: dict[SpeculationPolicy, PolicyPoint], key: Key) -> bool:
        """The rule's answer for ``key`` given the ``points`` at its load, asked once for
        each set of points and replications there (``_answers``): a study reads a point
        many times (every step of a search reads the loads it has already run) and the
        answer cannot change until the points there do."""
        assert self.rule is not None
        if self._rule_of is not self.rule:  # a study that changes its rule
            self._answers, self._rule_of = {}, self.rule
        state = (key, frozenset((p, point.replications) for p, point in points.items()))
        if state not in self._answers:
            self._answers[state] = self.rule(points, key[1])
        return self._answers[state]

    def complete(self, keys: Sequence[Key], upto: int | None = None) -> bool:
        """Run the rest of the replications of every point of ``keys`` that stopped early,
        up to ``upto`` (default: all of them), whatever the rule says (a study that finds
        it needs them: the draws of an interval near its reference); whether any ran.
        Points not run yet are not run."""
        end = self.replications if upto is None else min(upto, self.replications)
        tasks = []
        for load, p in dict.fromkeys(self.aliases.get(key, key) for key in keys):
            point = self.memo.get((load, p))
            if point is not None and point.replications < end:
                tasks.append(self.rest_task(load, p, point.replications, end))
        self._run(tasks, step=True)
        self._share()
        self.completed += len(tasks)
        return bool(tasks)

    def _run(self, tasks: list[PointTask], step: bool) -> None:
        """Run ``tasks`` and keep (or extend) their points: a batch's points in parallel,
        one process each; a step's points (a bisection's pair, a single point) cut into
        blocks of replications (sim/simulation/serving/simulate.py ``replication_blocks``)
        that run in parallel together, the bar advancing as each block ends. A point's
        blocks merged in order are the point run whole (every replication its own seed)."""
        if not tasks:
            return
        if step or len(tasks) == 1:
            self._run_blocks(tasks)
            return
        self._one_by_one = self._planned = 0
        batch = longest_first(self.executor, run_point, tasks, replications_of)
        for done, (i, point) in enumerate(batch, 1):
            self._keep(tasks[i], point)
            if self.progress:
                self.progress(done, len(tasks))

    def _run_blocks(self, tasks: list[PointTask]) -> None:
        width = self.executor.width()
        if width <= 1:  # in this process: one plan a point, the bar after each replication
            for task in tasks:
                self._keep(task, run_point(task, self.executor, self._replication_done))
                self._one_by_one += task.replications
            return
        total = sum(task.replications for task in tasks)
        done = 0

        def block_done(replications: int) -> None:
            nonlocal done
            done += replications
            self._replication_done(done, total)

        points = run_in_blocks(self.executor, tasks, width, block_done)
        for task, point in zip(tasks, points, strict=True):
            self._keep(task, point)
        self._one_by_one += total

    def _keep(self, task: PointTask, point: PolicyPoint) -> None:
        key = (task.load, task.policy)
        self.memo[key] = merge(self.memo[key], point) if task.first else point

    def expect(self, points: int) -> None:
        """At most ``points`` more (load, policy) points will run step by step (a
        bisection's bound, ``sim.studies.serving.break_even.refinement_bound``): the
        progress total of what follows."""
        self._planned = self._one_by_one + max(0, points) * self.replications

    def _replication_done(self, done: int, total: int) -> None:
        """One replication of a point run alone finished: the count so far out of the
        announced bound (or out of this point's end, when nothing announced covers it)."""
        if self.progress:
            so_far = self._one_by_one + done
            self.progress(so_far, max(self._planned, self._one_by_one + total))

    def __call__(self, load: Load, policy: SpeculationPolicy) -> PolicyPoint:
        key = (load, policy)
        if key not in self.memo:
            self.ensure([key], step=True)
        return self.memo[key]


def load_term(builder: PlanBuilder, points: Mapping[Any, PolicyPoint]) -> ModelErrorTerm | None:
    """The scenario's model-error term (sim/uncertainty/model_error.py) at a load's decode
    batch: the largest mean batch of the ``points`` run there (as the answers' 90%
    intervals take it). None for plans built without a scenario (no term)."""
    if not isinstance(builder, ScenarioPlans):
        return None
    batch = max((float(p.mean_batch.mean()) for p in points.values()), default=1.0)
    return builder.model_error.at(batch)


def gain_band(builder: PlanBuilder) -> Band | None:
    """The standard deviation on ln(gain) of the gains' model-error band at a load, from
    the points run there (sequential.py ``Band``): ``load_term``'s gain sigma. None for
    plans built without a scenario (no term)."""
    if not isinstance(builder, ScenarioPlans):
        return None

    def band(points: Points) -> float:
        term = load_term(builder, points)
        assert term is not None  # scenario plans
        return term.gain_sigma

    return band


def study_settings(builder: ScenarioPlans, load: Load) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The settings a study's document records (seed, replications, requests, lengths,
    scheduler, SLOs) and the setup's assumptions at ``load`` (its load line left out:
    a study names its own loads). Warm-up grows with the concurrency; it is given here at
    ``load``."""
    setup = builder.setup(load, builder.default_steps)
    plan = setup.plan
    w, sched = plan.workload, plan.scheduler
    settings: dict[str, Any] = {
        "seed": setup.seed,
        "replications": setup.replications,
        "requests": w.requests,
        "warmup_requests": w.warmup,
        "input_tokens_mean": w.input_tokens.mean,
        "output_tokens_mean": w.output_tokens.mean,
        "max_running_requests": sched.max_running_requests,
        "max_running_requests_speculative": sched.max_running_requests_speculative,
        "batching": sched.batching,
        "prefill": sched.prefill,
        "kv_capacity_tokens": sched.kv_capacity_tokens,
        "plain_kv_capacity_tokens": sched.plain_kv_capacity_tokens,
        "slo": {"ttft_ms": setup.slo.ttft_ms, "tpot_ms": setup.slo.tpot_ms},
    }
    notes = tuple(a for a in setup.assumptions if not a.startswith(("load:", "warm-up:")))
    return settings, notes
