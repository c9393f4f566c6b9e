"""Where a policy's draws start on the rate ladder (``completed_draws``' ``moves``,
sim/studies/serving/capacity_ladder.py): each draw's predicted move of its log capacity,
from the policy drawn before it in the same draw (``capacity_moves``) or, for plain
decoding, from the move of its service bound (``bound_moves``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from sim.errors import SpecsimError
from sim.simulation.serving.stability import service_bound
from sim.studies.serving.capacity_search import CapacitySearch
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import ScenarioPlans, plan_steps
from sim.uncertainty.perturb import InputDraws

__all__ = ["bound_moves", "capacity_moves"]


def capacity_moves(
    caps: Sequence[np.ndarray], searches: Sequence[CapacitySearch]
) -> np.ndarray | None:
    """Each draw's move of the log capacity of the last policy drawn before this one
    with a crossing (``caps`` (D,) per policy drawn so far, plain decoding first, in the
    order of ``searches``: the next smaller k, else plain decoding), ln(cap_d / nominal)
    (D,; NaN where the draw has none: beyond the ladder or rejected), to start this
    policy's draws (``completed_draws``). The inputs a draw moves (the server's costs,
    the acceptance) move every policy's capacity of that server, by tens of percent, and
    more alike the nearer the two policies' k: on the shipped serving scenario a draw
    moves k's log capacity by that of k - 1 within 0.0-1.7 ladder steps, against up to
    3.5 for plain decoding's move and k = 4. None without such a policy."""
    for c, s in zip(reversed(caps), reversed(searches[: len(caps)]), strict=True):
        if s.value is not None and not s.at_least:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.log(c) - math.log(s.value)
    return None


def bound_moves(draws: DrawnPoints, search: CapacitySearch) -> np.ndarray | None:
    """Each draw's move of the policy's service bound (sim/simulation/serving/stability.py
    ``service_bound``: the most requests a second its server answers, from the cost
    model, nothing simulated), ln(bound_d / bound) (D,; NaN for a draw the scenario
    rejects), to start plain decoding's draws (``completed_draws``' ``moves``), which no
    other policy's draws precede: a draw that makes the server slower or faster moves its
    capacity the same way. A prediction only (it picks a draw's first ladder rate;
    the capacity under the SLOs moves further than the bound on the shipped serving
    scenario, about twice): where it misses, the ladder's probes take over, as from the
    nominal capacity's rate. None for plans without a scenario or a bound that is not
    finite."""
    plans = draws.evaluator.builder
    if not isinstance(plans, ScenarioPlans) or not 0.0 < search.bound < math.inf:
        return None
    load = Load("rate", math.exp(search.origin))
    out = np.full(len(draws.draws), np.nan)
    for d, drawn in enumerate(draws.draws):
        builder = replace(plans, drawn=drawn, sampled=InputDraws())
        try:
            plan = builder(load, plan_steps(search.policy, builder))
        except SpecsimError:  # a draw outside what the scenario allows
            continue
        bound = service_bound(plan, plan.drafting(search.policy)).rate_per_s
        out[d] = math.log(bound / search.bound)
    return out
