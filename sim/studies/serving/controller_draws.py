"""90% intervals from inputs and model for ``controllers``: each policy's advantage over the
static table per phase, and where the static best-k table switches k.

The draws are those of every serving answer (sim/uncertainty/perturb.py ``input_draws``,
carried by the study's ``ScenarioPlans.draws``).

* **Advantage.** Each draw replays the phases with ``replications`` replications on the
  seeds of the nominal replay's first ones (common random numbers: the same trace and
  acceptance uniforms) on the drawn server. The static table and the fixed k are the
  nominal ones (what a user deploys does not change with what the model does not know);
  vLLM's offline profile is re-measured on the drawn server, as vLLM's generate_config.py
  profiles the server it runs on; SGLang's adaptive controller needs no profile. A draw's
  advantage per phase is the nominal advantage moved by the paired shift
  (``draw_intervals.shifted``); the interval is ``draw_intervals.interval90`` of the draws
  (their 5-95% and their normal prediction interval) joined with the nominal's Monte Carlo
  95% interval.
* **Switching threshold.** Where the best-k table's k changes between two grid loads, the
  nominal boundary is the crossing of the two k's paired gain (sim/studies/serving/best_k_forms.py
  ``refined_ends``); its interval is crossover's
  (sim/studies/serving/crossover_intervals.py ``crossing_interval90`` with ``versus`` the
  lower load's k): each draw's gain at the two grid loads around it, further loads outward
  only for a draw that does not cross between them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import FixedK, SpeculationPolicy
from sim.simulation.serving.metrics import Ratio
from sim.simulation.serving.plan import ServingPlan
from sim.studies.serving.break_even import find_crossings
from sim.studies.serving.crossover_intervals import crossing_interval90
from sim.studies.serving.draw_intervals import interval90, shifted
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, gain
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.uncertainty.model_error import ModelErrorTerm, crossing_band, join_ends
from sim.uncertainty.perturb import InputDraws, Overrides

__all__ = ["advantage_intervals", "switch_intervals"]

#: advantages[policy][metric]: (R, phases) per replication or (D, phases) per draw.
Advantages = dict[str, dict[str, np.ndarray]]


def advantage_intervals(
    builder: ScenarioPlans,
    draws: Sequence[Overrides],
    max_k: int,
    replay: Callable[[ServingPlan, Mapping[str, SpeculationPolicy], int], Advantages],
    policies_of: Callable[[ServingPlan], Mapping[str, SpeculationPolicy]],
    nominal: Advantages,
    ci95: Mapping[str, Mapping[str, Sequence[Ratio]]],
    *,
    replications: int,
) -> tuple[dict[str, dict[str, tuple[list[float] | None, ...]]], int]:
    """Per policy and metric, per phase, the advantage's 90% interval, and the draws run.

    ``replay(plan, policies, replications)``: the advantages of a replay on ``plan``
    (R, phases); ``policies_of(plan)``: the policies replayed on a drawn server;
    ``nominal``: the nominal replay's advantages (R, phases) and ``ci95`` their Ratios.
    """
    drawn: list[Advantages] = []
    for ov in draws:
        plans = replace(builder, drawn=ov, sampled=InputDraws())
        try:
            plan = plans.setup(Load("concurrency", 1), max_k).plan
        except SpecsimError:
            continue  # outside what the scenario allows
        drawn.append(replay(plan, policies_of(plan), replications))
    out: dict[str, dict[str, tuple[list[float] | None, ...]]] = {}
    for name, by_metric in nominal.items():
        out[name] = {}
        for m, own in by_metric.items():
            phases = own.shape[1]
            out[name][m] = tuple(
                interval90(
                    [
                        shifted(float(np.mean(own[:, p])), d[name][m][:, p], own[:replications, p])
                        for d in drawn
                    ],
                    ci95[name][m][p].ci95,
                )
                for p in range(phases)
            )
    return out, len(drawn)


def switch_intervals(
    evaluator: PointEvaluator,
    draws: DrawnPoints,
    users: Sequence[int],
    best: Sequence[int],
    objective: str,
    highest_measured: float,
    term_at: Callable[[float], ModelErrorTerm] | None = None,
) -> tuple[dict[str, Any], ...]:
    """Each switch of the best k between neighbouring grid loads ``users`` (``best``: the
    best k at each): the two k, the crossing of their paired gain (None without a single
    one), its Monte Carlo 95% and its 90% interval from inputs and model (users), and
    whether it lies beyond the highest measured batch. ``term_at(batch)``: the model-error
    term at a decode batch; the interval then also holds the loads between the two where
    the gain's band holds 1 (sim/uncertainty/model_error.py ``crossing_band`` over the
    grid ``users``, each load's term at the larger of the two k's mean decode batches
    there; an end at the grid's edge is open)."""
    grid = [Load("concurrency", float(c)) for c in users]
    out = []
    for (a, ka), (b, kb) in itertools.pairwise(zip(users, best, strict=True)):
        if ka == kb:
            continue
        lower, upper = FixedK(ka), FixedK(kb)

        def curve(x: float, lower: FixedK = lower, upper: FixedK = upper) -> Ratio:
            load = Load("concurrency", x)
            return gain(evaluator(load, upper), evaluator(load, lower), objective)

        found = find_crossings([float(a), float(b)], curve, integer=True)
        row: dict[str, Any] = {"from_k": ka, "to_k": kb, "between": [a, b]}
        if len(found) != 1:
            out.append(
                {
                    **row,
                    "at": None,
                    "ci95": None,
                    "interval90": None,
                    "beyond": b > highest_measured,
                }
            )
            continue
        c = found[0]
        iv = (
            crossing_interval90(draws, grid, kb, objective, c, versus=ka) if draws.draws else c.ci95
        )
        gains = [curve(float(x)).mean for x in users]
        if term_at is not None and min(gains) > 0:
            sigmas = [
                term_at(
                    max(
                        float(evaluator(Load("concurrency", float(x)), k).mean_batch.mean())
                        for k in (lower, upper)
                    )
                ).gain_sigma
                for x in users
            ]
            if max(sigmas) > 0:  # (at a measured batch the interval stays the inputs')
                band = crossing_band([float(x) for x in users], gains, sigmas, c.at)
                iv = join_ends((iv[0], iv[1]), band, integer=True)
        out.append(
            {
                **row,
                "at": c.at,
                "ci95": list(c.ci95),
                "interval90": list(iv),
                "beyond": c.at > highest_measured,
            }
        )
    return tuple(out)
