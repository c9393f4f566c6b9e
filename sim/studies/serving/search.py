"""The acceptance a drafter needs at a load: ``search`` with the serving simulation.

``search_acceptance`` (sim/studies/search.py) finds, per target and k, the lowest
acceptance (the first-position rate under the scenario's acceptance shape, flat or
decay-aware, or a scaled profile) at which per-user tok/s (the mean, or a fraction
``quantile`` of requests) reaches the target, by bisection on common random numbers with a
95% interval from band inversion. Its Monte Carlo is an injection seam (``simulate``);
``ServingStats`` fills it with the serving simulation at a closed-loop concurrency or a
Poisson rate: the scenario at that load (sim/scenario/overrides.py ``with_load``)
with the lever's acceptance model, speculating at the searched k. At every lever value
the same seed gives the same users, arrivals, lengths and acceptance draws (a request's
draws are thresholds on fixed uniforms, monotone in its rates), so the estimate moves
monotonically with the lever up to the scheduling feedback of faster requests.

Statistics at a load (``serving_stats``): mean per-user tok/s over replication means with
a Student-t 95% interval (as batch-1 search), P(per-user tok/s >= target) as the mean of
per-replication fractions with a t interval (requests that share a server are not
independent; with one replication, the pooled Wilson interval), and the pooled accept
length (tokens per decode cycle).

Rates above what the server answers. At a Poisson rate, a lever value at which the rate
is above the service bound of speculation at k (sim/simulation/serving/stability.py: the
bound grows with the accept length) has no steady state and is not simulated: it counts
as missing every target (``unstable_stats``), so a target is answered only where the load
is stable, and a k whose bound is under the rate even with every draft accepted reaches
no target at that rate (``Stability``; the document's ``stability`` and each unreachable
target's reason say so).

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

from sim.binding.bound import Bound, bind
from sim.errors import SpecsimError
from sim.hardware.pass_terms import PassTerms
from sim.model.acceptance import AcceptanceModel
from sim.model.policy import FixedK
from sim.model.tree.acceptance import Acceptance, TreeAcceptance
from sim.scenario.overrides import pin_verify_tokens
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import positive_interval, request_metrics, share_interval
from sim.simulation.serving.overload import above, at_most
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.setup import serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.stability import ServiceBound, service_bound
from sim.simulation.summary import Stats, TargetProbability, wilson_ci95
from sim.studies.acceptance_lever import AcceptanceLever, acceptance_levers
from sim.studies.search import search_acceptance
from sim.studies.search_results import SearchResult
from sim.studies.serving.paired_metrics import Load

__all__ = [
    "ServingStats",
    "Stability",
    "search_at_load",
    "serving_stats",
    "stability",
    "unstable_stats",
]


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


def unstable_stats(targets: Sequence[float]) -> Stats:
    """What a lever value whose load is above the service bound counts as: no tok/s, no
    request reaching any target, certainly (zero-width intervals; accept length unknown)."""
    probabilities = tuple(TargetProbability(float(t), 0.0, (0.0, 0.0)) for t in targets)
    return Stats(0.0, (0.0, 0.0), float("nan"), probabilities, simulated=False)


@dataclass(frozen=True, slots=True)
class Stability:
    """Speculation at ``num_steps`` against the searched rate: its service bound with every
    draft accepted (the lever's top, ``bound_at_top``), the least mean rate ``alpha`` at
    which the rate is within the bound (None: at none) and the lowest the search looks at
    (``lowest_alpha``, the lever's bottom; not in the document)."""

    num_steps: int
    bound_at_top: ServiceBound
    least_stable_alpha: float | None
    lowest_alpha: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "service_bound_at_top_per_s": self.bound_at_top.rate_per_s,
            "top_alpha_service_bound": self.bound_at_top.to_dict(),
            "least_stable_alpha": self.least_stable_alpha,
        }


def stability(
    simulate: ServingStats, scenario: Scenario, num_steps: Sequence[int]
) -> list[Stability]:
    """Per k, where the rate of ``simulate``'s load is within speculation's bound along the
    acceptance lever (the bound grows with the accept length, so the stable lever values
    are an interval up to the top; its lower end by bisection to 1e-6 of the lever)."""
    rate = float(simulate.load.value)
    base = pin_verify_tokens(scenario)
    out = []
    for k, lever in acceptance_levers(base, num_steps).items():

        def bound(x: float, lever: AcceptanceLever = lever) -> float:
            found = simulate.bound(lever.base, lever.model_at(x))
            assert found is not None  # a rate's bound
            return found.rate_per_s

        top = simulate.bound(lever.base, lever.model_at(lever.x_max))
        assert top is not None
        least: float | None = None
        if rate <= top.rate_per_s:
            lo, hi = lever.x_min, lever.x_max
            if rate <= bound(lo):
                hi = lo
            while hi - lo > 1e-6 * lever.x_max:
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if rate <= bound(mid) else (mid, hi)
            least = lever.alpha(hi)
        out.append(Stability(k, top, least, float(lever.alpha(lever.x_min) or 0.0)))
    return out


def _with_stability(result: SearchResult, rate: float, found: Sequence[Stability]) -> SearchResult:
    """``result`` with where the rate is above a bound said: each k that no acceptance
    makes stable has no simulated ceiling, and a target no k reaches names the bounds."""
    hopeless = {s.num_steps: s for s in found if s.least_stable_alpha is None}
    if not any(
        s.least_stable_alpha is None or s.least_stable_alpha > s.lowest_alpha for s in found
    ):
        return result  # stable wherever the search looks: the document is as it was
    targets = []
    for t in result.targets:
        rows = tuple(
            dataclasses.replace(r, simulated_ceiling_tok_s=None, simulated_ceiling_alpha=None)
            if r.num_steps in hopeless
            else r
            for r in t.per_num_steps
        )
        reason = t.reason
        if reason is not None and hopeless:
            labels = [f"k = {k}" for k in hopeless]
            bounds = "; ".join(
                f"k = {k}: {at_most(s.bound_at_top.rate_per_s)}" for k, s in hopeless.items()
            )
            said = (
                f"{above(rate, labels)} even with every draft accepted ({bounds}): no "
                "steady state, not simulated"
            )
            reason = said if len(hopeless) == len(rows) else f"{reason}; {said}"
        targets.append(dataclasses.replace(t, per_num_steps=rows, reason=reason))
    settings = {
        **result.settings,
        "stability": {
            "offered_rate_per_s": rate,
            "per_num_steps": [s.to_dict() for s in found],
            "not_simulated": result.refused,
            "note": (
                "lever values at which the rate is above speculation's service bound were "
                "not simulated (not_simulated: how many the search met; evaluations counts "
                "the runs) and count as missing every target"
            ),
        },
    }
    return dataclasses.replace(result, targets=tuple(targets), settings=settings)


@dataclass(frozen=True, slots=True)
class ServingStats:
    """A ``SimulateFn`` for search: the serving simulation at ``load`` (picklable).

    ``base_dir``: where the scenario's relative paths start. Plans are built once per
    scenario (the lever only swaps the acceptance model).
    """

    load: Load
    base_dir: str | None = None
    _plans: dict[str, ServingPlan] = field(default_factory=dict, repr=False, compare=False)
    #: The token-count terms the plans' passes share (sim/hardware/pass_terms.py).
    _terms: PassTerms = field(default_factory=PassTerms, repr=False, compare=False)

    def plan(self, scenario: Scenario) -> ServingPlan:
        key = scenario.model_dump_json()
        if key not in self._plans:
            over: dict[str, Any] = {self.load.field.split(".", 1)[1]: self.load.value}
            at_load = with_load(scenario, source="search", **over)
            base = Path(self.base_dir) if self.base_dir else None
            setup = serving_setup(
                bind(at_load, self._terms.passes),
                base_dir=base,
                source="search",
                terms=self._terms,
            )
            self._plans[key] = setup.plan
        return self._plans[key]

    def plan_at(self, scenario: Scenario, acceptance: AcceptanceModel | None) -> ServingPlan:
        """The plan of ``scenario`` at this load with ``acceptance`` (None: its own)."""
        plan = self.plan(scenario)
        if acceptance is not None:
            plan = dataclasses.replace(plan, acceptance=acceptance)
        return plan

    def bound(self, scenario: Scenario, acceptance: AcceptanceModel | None) -> ServiceBound | None:
        """Speculation's service bound at this acceptance; None for a closed loop."""
        return self._bound(self.plan_at(scenario, acceptance), scenario.num_steps)

    def _bound(self, plan: ServingPlan, num_steps: int) -> ServiceBound | None:
        return None if self.load.integer else service_bound(plan, plan.drafting(FixedK(num_steps)))

    def __call__(
        self, model: Bound | Scenario, acceptance: Acceptance | None, targets: Sequence[float]
    ) -> Stats:
        # the plan binds the scenario at this load once (``plan``): a bound model's scenario
        scenario = model.scenario if isinstance(model, Bound) else model
        if isinstance(acceptance, TreeAcceptance):
            raise SpecsimError(
                "a serving search scales a chain's acceptance model, not a tree's",
                param="acceptance",
            )
        plan = self.plan_at(scenario, acceptance)
        bound = self._bound(plan, scenario.num_steps)
        if bound is not None and self.load.value > bound.rate_per_s:
            return unstable_stats(targets)  # no steady state: not simulated
        run = simulate_serving(
            plan,
            work_out(plan, {"speculative": FixedK(scenario.num_steps)}),
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
    decay-aware shape of sim/binding/acceptance_shape.py ``acceptance_shape``) scaled by its
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
    result = dataclasses.replace(result, engine="serving", fidelity="cycle", settings=settings)
    if load.integer:
        return result
    found = stability(simulate, scenario, sorted(set(num_steps)))
    return _with_stability(result, float(load.value), found)
