"""The memoizing point evaluator of the serving studies.

``PointEvaluator`` runs (load, policy) pairs at one seed and number of replications and
keeps every result, so studies that revisit a load (bisection, band inversion, several
metrics, several k) never run it twice; the baseline (k = 0) of a load is one run shared by
every k. Batches of new points run through the one executor (sim/parallel/), each point
in one process with its own seed (sim/studies/serving/point_tasks.py): results never
depend on the worker count. Its plans come from a ``PlanBuilder``
(sim/studies/serving/scenario_plans.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from sim.errors import SpecsimError
from sim.model.policy import SpeculationPolicy
from sim.parallel import Executor, LocalExecutor, longest_first
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.stability import LoadCheck, ServiceBound, service_bound
from sim.studies.serving.paired_metrics import Load, PolicyPoint
from sim.studies.serving.point_tasks import PointTask, replications_of, run_in_blocks, run_point
from sim.studies.serving.scenario_plans import PlanBuilder, plan_steps
from sim.studies.serving.sequential import FIRST, Rule, merge

__all__ = ["Key", "PointEvaluator"]


Key = tuple[Load, SpeculationPolicy]


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
