"""One policy at one load as a task a process runs: ``PointTask`` and ``run_point`` (its
replications in this process or through an executor), ``run_points`` (a unit of a pool's
work), ``run_in_blocks`` (tasks cut into blocks of replications for the workers, merged
back in order), and ``same_point`` (the fixed k whose simulation an engine form's point
is). Every replication carries its own seed: a point is the same however it is cut or
where it runs. These are the functions the studies send to workers
(sim/studies/worker.py ``TASK_MODULES``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sim.errors import SpecsimError
from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy
from sim.parallel import Executor, longest_first
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.simulate import replication_blocks, simulate_serving, work_out
from sim.studies.serving.paired_metrics import Load, PolicyPoint, policy_point
from sim.studies.serving.scenario_plans import PlanBuilder, plan_steps
from sim.studies.serving.sequential import merge

__all__ = ["PointTask", "replications_of", "run_in_blocks", "run_point", "run_points", "same_point"]


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
