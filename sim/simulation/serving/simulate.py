"""Replications of the serving simulation under several policies on the same arrivals.

Seeds become generators here and only here for the serving simulation:
``SeedSequence(seed).spawn(replications)`` gives one child per replication and each child
spawns the replication's four streams (``ServingStreams``: arrivals, lengths, rates,
keys). Every policy of a replication runs on fresh generators from the same child, so the
baseline and every speculation policy see the same users, arrivals, lengths, per-request
rates and per-request acceptance draws (common random numbers): differences between
policies are paired, and studies (crossover, best k, capacity) compare policies at the
cost of the runs alone. A replication reads only its own streams, so results do not
depend on ``workers``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import SpeculationPolicy
from sim.parallel import Executor, LocalExecutor
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.streams import ServingStreams

__all__ = ["ServingRun", "serving_streams", "simulate_serving", "work_out"]

Progress = Callable[[int, int], None]


def serving_streams(child: np.random.SeedSequence) -> ServingStreams:
    """The four independent streams of one replication from its SeedSequence child.

    The same four every time it is called (``SeedSequence.spawn`` counts its calls, so the
    children ``child.spawn(4)`` would give the first time are built directly): every policy
    of a replication starts from identical generators.
    """
    arrivals, lengths, rates, keys = (
        np.random.Generator(
            np.random.PCG64(
                np.random.SeedSequence(
                    child.entropy, spawn_key=(*child.spawn_key, i), pool_size=child.pool_size
                )
            )
        )
        for i in range(4)
    )
    return ServingStreams(arrivals=arrivals, lengths=lengths, rates=rates, keys=keys)


@dataclass(frozen=True, slots=True)
class ServingRun:
    """Records of every policy: ``records[name][r]`` is replication r of policy ``name``."""

    plan: ServingPlan
    policies: dict[str, SpeculationPolicy]
    seed: int
    records: dict[str, list[ServingRecord]]

    @property
    def replications(self) -> int:
        return len(next(iter(self.records.values())))


def _replicate(
    plan: ServingPlan,
    draftings: Mapping[str, Drafting],
    child: np.random.SeedSequence,
    *,
    horizon_ms: float | None,
    delivery_gaps: bool = True,
) -> dict[str, ServingRecord]:
    """One replication of every policy, each on fresh streams from the same child."""
    return {
        name: run_replication(
            plan, drafting, serving_streams(child), horizon_ms, delivery_gaps=delivery_gaps
        )
        for name, drafting in draftings.items()
    }


def _replicate_block(
    plan: ServingPlan,
    draftings: Mapping[str, Drafting],
    children: Sequence[np.random.SeedSequence],
    *,
    horizon_ms: float | None,
    delivery_gaps: bool = True,
) -> list[dict[str, ServingRecord]]:
    """``_replicate`` of each child in turn (one task of an executor)."""
    return [
        _replicate(plan, draftings, child, horizon_ms=horizon_ms, delivery_gaps=delivery_gaps)
        for child in children
    ]


#: Tasks a parallel executor gets per slot when replications are cut into blocks: more
#: than one, so that a slow slot (a shared machine) does not hold back the end.
BLOCKS_PER_SLOT = 2


def replication_blocks(replications: int, width: int) -> list[tuple[int, int]]:
    """[lo, hi) of the blocks of replications that run as one task each: one replication a
    block in one process (progress after each), otherwise ``BLOCKS_PER_SLOT`` blocks a slot
    of ``width`` (a point's ten replications on two workers: four tasks, not ten, each a
    task's fixed cost of the executor: sending the plan, scheduling, returning)."""
    parts = replications if width <= 1 else min(replications, BLOCKS_PER_SLOT * width)
    edges = [replications * j // parts for j in range(parts + 1)]
    return list(itertools.pairwise(edges))


def work_out(plan: ServingPlan, policies: Mapping[str, SpeculationPolicy]) -> dict[str, Drafting]:
    """Each of ``policies`` (by name) worked out on ``plan`` once (``ServingPlan.check``),
    as ``simulate_serving`` takes them; SpecsimError naming the policy when one cannot run
    on the plan (a scenario's setup says which field to change instead:
    ``ServingSetup.draftings``)."""
    draftings = {}
    for name, policy in policies.items():
        try:
            draftings[name] = plan.check(policy)
        except ValueError as exc:
            raise SpecsimError(f"{exc} ({name})", param="policies") from None
    return draftings


def simulate_serving(
    plan: ServingPlan,
    draftings: Mapping[str, Drafting],
    *,
    replications: int,
    seed: int,
    workers: int = 1,
    progress: Progress | None = None,
    horizon_ms: float | None = None,
    executor: Executor | None = None,
    first: int = 0,
    delivery_gaps: bool = True,
) -> ServingRun:
    """Run ``replications`` replications of ``plan`` under each policy.

    ``draftings`` maps names to policies worked out on the plan (``work_out(plan,
    {"baseline": FixedK(0), "k=3": FixedK(3)})``, or a setup's ``ServingSetup.draftings``).
    ``workers`` > 1 runs replications in that many processes, or ``executor``
    (sim/parallel/) runs them: identical results either way. ``progress(done, total)``
    after each replication. ``first``: the index of the first replication run
    (replications ``first`` to ``first + replications - 1`` of the seed, each the same
    whatever ``first`` is: child i of ``SeedSequence(seed)`` does not depend on how many
    are spawned), so a run continued later pairs with the one before. ``delivery_gaps``
    False: the records keep no delivery gaps (no ITL; a study that reads none saves their
    streaming, 1-8% of a replication), every other number the same.
    """
    for name, value in (("replications", replications), ("workers", workers)):
        if value < 1:
            raise SpecsimError(f"must be at least 1, got {value}", param=name)
    if first < 0:
        raise SpecsimError(f"must be >= 0, got {first}", param="first")
    if seed < 0:
        raise SpecsimError(f"must be >= 0, got {seed}", param="seed")
    if not draftings:
        raise SpecsimError("give at least one policy", param="policies")
    children = np.random.SeedSequence(seed).spawn(first + replications)[first:]
    run = executor or LocalExecutor(workers)
    blocks = replication_blocks(replications, run.width())
    task = functools.partial(
        _replicate_block,
        plan,
        dict(draftings),
        horizon_ms=horizon_ms,
        delivery_gaps=delivery_gaps,
    )
    results: dict[int, dict[str, ServingRecord]] = {}
    parts = [children[lo:hi] for lo, hi in blocks]
    for b, block in run.map_unordered(task, parts):
        results.update(zip(range(*blocks[b]), block, strict=True))
        if progress:
            progress(len(results), replications)
    records = {name: [results[i][name] for i in range(replications)] for name in draftings}
    policies = {name: d.policy for name, d in draftings.items()}
    return ServingRun(plan, policies, seed, records)
