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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import SpeculationPolicy
from sim.parallel import Executor, LocalExecutor
from sim.simulation.serving.engine import ServingPlan, ServingStreams, run_replication
from sim.simulation.serving.records import ServingRecord

__all__ = ["ServingRun", "serving_streams", "simulate_serving"]

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
    policies: Mapping[str, SpeculationPolicy],
    child: np.random.SeedSequence,
    *,
    horizon_ms: float | None,
) -> dict[str, ServingRecord]:
    """One replication of every policy, each on fresh streams from the same child."""
    return {
        name: run_replication(plan, policy, serving_streams(child), horizon_ms)
        for name, policy in policies.items()
    }


def simulate_serving(
    plan: ServingPlan,
    policies: Mapping[str, SpeculationPolicy],
    *,
    replications: int,
    seed: int,
    workers: int = 1,
    progress: Progress | None = None,
    horizon_ms: float | None = None,
    executor: Executor | None = None,
    first: int = 0,
) -> ServingRun:
    """Run ``replications`` replications of ``plan`` under each policy.

    ``policies`` maps names to policies (e.g. ``{"baseline": FixedK(0), "k=3": FixedK(3)}``);
    SpecsimError if one cannot run on the plan. ``workers`` > 1 runs replications in that
    many processes, or ``executor`` (sim/parallel.py) runs them: identical results either
    way. ``progress(done, total)`` after each replication. ``first``: the index of the
    first replication run (replications ``first`` to ``first + replications - 1`` of the
    seed, each the same whatever ``first`` is: child i of ``SeedSequence(seed)`` does not
    depend on how many are spawned), so a run continued later pairs with the one before.
    """
    for name, value in (("replications", replications), ("workers", workers)):
        if value < 1:
            raise SpecsimError(f"must be at least 1, got {value}", param=name)
    if first < 0:
        raise SpecsimError(f"must be >= 0, got {first}", param="first")
    if seed < 0:
        raise SpecsimError(f"must be >= 0, got {seed}", param="seed")
    if not policies:
        raise SpecsimError("give at least one policy", param="policies")
    for name, policy in policies.items():
        try:
            plan.check(policy)
        except ValueError as exc:
            raise SpecsimError(f"{exc} ({name})", param="policies") from None
    children = np.random.SeedSequence(seed).spawn(first + replications)[first:]
    task = functools.partial(_replicate, plan, dict(policies), horizon_ms=horizon_ms)
    results: dict[int, dict[str, ServingRecord]] = {}
    for i, result in (executor or LocalExecutor(workers)).map_unordered(task, children):
        results[i] = result
        if progress:
            progress(len(results), replications)
    records = {name: [results[i][name] for i in range(replications)] for name in policies}
    return ServingRun(plan, dict(policies), seed, records)
