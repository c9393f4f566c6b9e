"""Step 3 of ``best_k`` (sim/studies/serving/best_k.py), the check out of sample: the
table, the threshold and every fixed k run again at the grid loads and at the geometric
midpoints between them (``check_loads``), at another seed (``seed + 1``): at each load the
paired difference form - fixed k with its 95% interval (``Check``). The table "beats
every fixed k within CI" when no fixed k is significantly better than it at any load.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.model.policy import FixedK, SpeculationPolicy
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, difference, level, ratio_doc
from sim.studies.serving.sequential import difference_tied

__all__ = ["Check", "check_loads", "check_policies", "tie_note"]


def check_loads(users: Sequence[int]) -> list[int]:
    """The grid and the geometric midpoints between neighbouring grid loads (integers)."""
    out = set(users)
    for a, b in itertools.pairwise(users):
        mid = round(math.sqrt(a * b))
        if a < mid < b:
            out.add(mid)
    return sorted(out)


@dataclass(frozen=True, slots=True)
class Check:
    """One policy at one load of the check: its objective and its paired advantage over
    each fixed k (> 0: the policy is better)."""

    users: int
    objective: Ratio
    advantage: dict[int, Ratio]

    def worse_than(self) -> list[int]:
        """Fixed k significantly better than the policy here (interval below 0)."""
        return [k for k, r in self.advantage.items() if r.ci95 is not None and r.ci95[1] < 0.0]

    def better_than(self) -> list[int]:
        return [k for k, r in self.advantage.items() if r.ci95 is not None and r.ci95[0] > 0.0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "users": self.users,
            "objective": ratio_doc(self.objective),
            "advantage_over": {str(k): ratio_doc(r) for k, r in self.advantage.items()},
            "significantly_worse_than": self.worse_than(),
            "significantly_better_than": self.better_than(),
        }


def check_policies(
    evaluator: PointEvaluator,
    users: Sequence[int],
    ks: Sequence[int],
    objective: str,
    policies: dict[str, SpeculationPolicy],
) -> tuple[dict[str, tuple[Check, ...]], dict[int, tuple[Ratio, ...]]]:
    loads = [Load("concurrency", c) for c in users]
    all_policies = [*policies.values(), *(FixedK(k) for k in ks)]
    evaluator.ensure([(load, p) for load in loads for p in all_policies])
    checks = {}
    for name, policy in policies.items():
        rows = []
        for load in loads:
            mine = evaluator(load, policy)
            rows.append(
                Check(
                    int(load.value),
                    level(mine, objective),
                    {k: difference(mine, evaluator(load, FixedK(k)), objective) for k in ks},
                )
            )
        checks[name] = tuple(rows)
    fixed = {k: tuple(level(evaluator(load, FixedK(k)), objective) for load in loads) for k in ks}
    return checks, fixed


def tie_note(
    checker: PointEvaluator,
    users: Sequence[int],
    policies: dict[str, SpeculationPolicy],
    ks: Sequence[int],
    objective: str,
) -> tuple[str, ...]:
    """The assumption for the check's pairs that stopped on an exact tie (sequential.py
    ``exact_tie``: the form and the fixed k agree on every replication run, and one of
    the two stopped before all of them); none: nothing."""
    ties = []
    for c in users:
        load = Load("concurrency", c)
        for name, policy in policies.items():
            for k in ks:
                a, b = checker(load, policy), checker(load, FixedK(k))
                short = min(a.replications, b.replications)
                if a is not b and short < checker.replications and difference_tied(a, b, objective):
                    ties.append(f"{name} and k = {k} at {c} user{'' if c == 1 else 's'} ({short})")
    if not ties:
        return ()
    return (
        "the check at seed + 1: a form and a fixed k that agree exactly on every "
        "replication run, from the first look on (the same decisions on the same random "
        "numbers: the form drafts that k at every batch the load reached), are taken as "
        "tied and stop there (assumed: a replication not run would agree too); "
        "replications run: " + "; ".join(ties),
    )
