"""The acceptance a drafter needs at a load: ``search`` with the serving simulation.

``search_acceptance`` (sim/studies/search.py) finds, per target and k, the lowest
acceptance (the first-position rate under the scenario's acceptance shape, flat or
decay-aware, or a scaled profile) at which per-user tok/s (the mean, or a fraction
``quantile`` of requests) reaches the target, by bisection on common random numbers with a
95% interval from band inversion. Its Monte Carlo is an injection seam (``simulate``);
``ServingStats`` fills it with the serving simulation at a closed-loop concurrency or a
Poisson rate: the scenario at that load (sim/simulation/serving/setup.py ``with_load``)
with the lever's acceptance model, speculating at the searched k. At every lever value
the same seed gives the same users, arrivals, lengths and acceptance draws (a request's
draws are thresholds on fixed uniforms, monotone in its rates), so the estimate moves
monotonically with the lever up to the scheduling feedback of faster requests.

Statistics at a load (``serving_stats``): mean per-user tok/s over replication means with
a Student-t 95% interval (as batch-1 search), P(per-user tok/s >= target) as the mean of
per-replication fractions with a t interval (requests that share a server are not
independent; with one replication, the pooled Wilson interval), and the pooled accept
length (tokens per decode cycle).

At concurrency 1 without prefill (a scenario without prompt tokens) the serving engine is
the batch-1 engine's model, so the search agrees with today's batch-1 search within the
Monte Carlo intervals (tested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.model.acceptance import AcceptanceModel
from sim.model.policy import FixedK
from sim.scenario.schema import Scenario
from sim.simulation.serving.engine import ServingPlan
from sim.simulation.serving.metrics import positive_interval, request_metrics, share_interval
from sim.simulation.serving.records import ServingRecord
from sim.simulation.serving.setup import serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.simulation.summary import Stats, TargetProbability, wilson_ci95
from sim.studies.search import SearchResult, search_acceptance
from sim.studies.serving_points import Load

__all__ = ["ServingStats", "search_at_load", "serving_stats"]


def serving_stats(records: Sequence[ServingRecord], targets: Sequence[float]) -> Stats:
    """Search statistics of R replications of one speculating policy (module docstring)."""
    per_user = [request_metrics(r)["per_user_tok_s"] for r in records]
    per_user = [v[~np.isnan(v)] for v in per_user]
    means = np.array([v.mean() for v in per_user])
    mean, ci = positive_interval(means)
    if ci is None:
        ci = (mean, mean)
    probabilities = []
    for t in targets:
        shares = np.array([np.mean(v >= t) for v in per_user])
        p, p_ci = share_interval(shares)
        if p_ci is None:
            hits = int(sum((v >= t).sum() for v in per_user))
            p_ci = wilson_ci95(hits, int(sum(v.size for v in per_user)))
        lo, hi = max(0.0, p_ci[0]), min(1.0, p_ci[1])
        probabilities.append(TargetProbability(float(t), float(p), (lo, hi)))
    cycles = sum(r.request_cycles for r in records)
    tokens = sum(r.cycle_tokens for r in records)
    accept = tokens / cycles if cycles else float("nan")
    return Stats(mean, (float(ci[0]), float(ci[1])), accept, tuple(probabilities))


@dataclass(frozen=True)
class ServingStats:
    """A ``SimulateFn`` for search: the serving simulation at ``load`` (picklable).

    ``base_dir``: where the scenario's relative paths start. Plans are built once per
    scenario (the lever only swaps the acceptance model).
    """

    load: Load
    base_dir: str | None = None
    _plans: dict[str, ServingPlan] = field(default_factory=dict, repr=False, compare=False)

    def plan(self, scenario: Scenario) -> ServingPlan:
        key = scenario.model_dump_json()
        if key not in self._plans:
            over: dict[str, Any] = {self.load.field.split(".", 1)[1]: self.load.value}
            at_load = with_load(scenario, source="search", **over)
            base = Path(self.base_dir) if self.base_dir else None
            self._plans[key] = serving_setup(at_load, base_dir=base, source="search").plan
        return self._plans[key]

    def __call__(
        self, scenario: Scenario, acceptance: AcceptanceModel | None, targets: Sequence[float]
    ) -> Stats:
        plan = self.plan(scenario)
        if acceptance is not None:
            plan = dataclasses.replace(plan, acceptance=acceptance)
        run = simulate_serving(
            plan,
            {"speculative": FixedK(scenario.num_steps)},
            replications=scenario.simulation.replications,
            seed=scenario.simulation.seed,
        )
        return serving_stats(run.records["speculative"], targets)


def search_at_load(
    scenario: Scenario,
    targets: Sequence[float],
    num_steps: Iterable[int],
    load: Load,
    *,
    quantile: float | None = None,
    workers: int = 1,
    base_dir: str | Path | None = None,
) -> SearchResult:
    """``search_acceptance`` with per-user tok/s simulated at ``load``; the result names
    the load and says that its closed-form columns (hint, ceiling) are batch-1 numbers.
    The lever is the batch-1 search's: the scenario's acceptance shape (flat, or the
    decay-aware shape of sim/scenario/bind.py ``acceptance_shape``) scaled by its
    first-position rate, or a listed profile or mix scaled as a whole."""
    simulate = ServingStats(load, None if base_dir is None else str(base_dir))
    result = search_acceptance(
        scenario,
        targets,
        num_steps,
        quantile=quantile,
        simulate=simulate,
        workers=workers,
        uncertainty=False,
    )
    settings = {
        **result.settings,
        "load": {"kind": load.kind, "value": load.value, "label": load.label()},
        "note": (
            f"per-user tok/s simulated by the serving engine at {load.label()}; "
            "closed_form_alpha, ceiling_tok_s and closed_form_curves are the batch-1 "
            "closed forms (a starting point, not the answer at this load); the 90% "
            "interval from inputs and model is not computed at a load (only the Monte "
            "Carlo 95% interval)"
        ),
    }
    return dataclasses.replace(result, engine="serving", fidelity="cycle", settings=settings)
