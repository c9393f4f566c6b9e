"""A load sweep's runs priced by the model (``TpotModel``, ``predicted_tpot_ms``): each run's
decode time per output token at its load and context, or replayed as its own job, and
the standard error a fit weighs it by (``tpot_sigma_ms``); the model of a figure is
sim/calibration/load_fit.py's docstring."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sim.binding.bound import Bound, bind
from sim.binding.closed_form import scenario_rates
from sim.binding.draft_binding import draft_binding
from sim.binding.serving_cost import scenario_serving_cost
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import REL_FLOOR, SWEEP_SOURCE
from sim.hardware.pass_terms import PassTerms
from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft
from sim.model.rates import mean_accept_length
from sim.scenario.schema import Scenario
from sim.simulation.serving.setup import serving_setup


def _draft(scenario: Scenario, point: LoadPoint, speculative: bool) -> Draft:
    """The draft a run verifies: its own (bench_speculative rows), else the scenario's."""
    from sim.model.tree.acceptance import TreeDraft  # lazy: trees only

    if not speculative:
        return 0
    if point.num_steps is not None:
        if point.tree:
            assert point.topk is not None and point.num_draft_tokens is not None
            return TreeDraft(point.num_steps, point.topk, point.num_draft_tokens)
        return point.num_steps
    return draft_binding(scenario).draft


def _accept_length(scenario: Scenario, point: LoadPoint, speculative: bool) -> float:
    if not speculative:
        return 1.0
    if point.accept_length is not None:
        return point.accept_length
    return mean_accept_length(scenario_rates(scenario))


def is_speculative(scenario: Scenario, point: LoadPoint) -> bool:
    if point.speculative is not None:
        return point.speculative
    return scenario.num_steps > 0


@dataclass(frozen=True, slots=True)
class _Run:
    """What a run's predicted TPOT takes that no serving term moves: whether it drafts,
    its draft and accept length, and (a run without its own job) its mean context and the
    two whole batches its load lies between."""

    point: LoadPoint
    speculative: bool
    draft: Draft
    accept_length: float
    context_tokens: float
    low: int
    high: int


class TpotModel:
    """``predicted_tpot_ms`` bound once for a fit that asks at many values of the serving
    terms (the load fit's steps, a recorded refit's): ``model`` is set up once as a
    serving plan (sim/simulation/serving/setup.py ``serving_setup``: its policies, KV
    capacity and checks, which read no serving term a fit moves), each run's draft,
    accept length, context and batches are worked out once, and ``tpot_ms(values)``
    prices only the batched iteration cost again (sim/binding/serving_cost.py
    ``scenario_serving_cost``) with ``values`` (``serving.*`` fields: ``Bound.with_serving``).
    ``terms``: as ``predicted_tpot_ms`` takes them. The numbers are those of
    ``predicted_tpot_ms`` of the scenario with ``values`` set."""

    __slots__ = ("_bound", "_cost", "_max_beams", "_runs", "_speculates", "_terms")

    def __init__(
        self,
        model: Bound | Scenario,
        points: Sequence[LoadPoint],
        terms: PassTerms | None = None,
    ) -> None:
        memo = None if terms is None else terms.passes
        bound = model if isinstance(model, Bound) else bind(model, memo)
        setup = serving_setup(bound, source=SWEEP_SOURCE, terms=terms)
        self._bound, self._terms = bound, terms
        self._cost = setup.plan.cost
        self._speculates, self._max_beams = setup.speculates, setup.max_beams
        scenario = bound.scenario
        default_context = scenario.timing.context_tokens or 0.0
        runs = []
        for p in points:
            spec = is_speculative(scenario, p)
            context = p.context_tokens if p.context_tokens is not None else default_context
            runs.append(
                _Run(
                    p,
                    spec,
                    _draft(scenario, p, spec),
                    _accept_length(scenario, p, spec),
                    context,
                    max(1, math.floor(p.load)),
                    max(1, math.ceil(p.load)),
                )
            )
        self._runs = tuple(runs)

    def cost(
        self, values: Mapping[str, float] | None = None, source: str = "override"
    ) -> IterationCost:
        """The iteration cost the serving engine prices its passes with, at ``values``
        (None: the model's own), set by ``source``."""
        if not values:
            return self._cost
        bound = self._bound.with_serving(values, source=source)
        return scenario_serving_cost(
            bound,
            speculative=self._speculates,
            max_beams=self._max_beams,
            source=SWEEP_SOURCE,
            terms=self._terms,
        )

    def tpot_ms(
        self, values: Mapping[str, float] | None = None, source: str = "override"
    ) -> np.ndarray:
        """Model TPOT (ms) of each run at ``values`` (``cost``); shape (len(points),)."""
        cost = self.cost(values, source)
        out = []
        for run in self._runs:
            if run.point.job is not None:  # the run's own job (sim/calibration/run_job.py)

                def iteration_ms(
                    b: int, sums: np.ndarray, d: Draft = run.draft, s: bool = run.speculative
                ) -> np.ndarray:
                    return cost.decode_ms(b, d, sums, drafter=s)

                out.append(run.point.job.tpot_ms(iteration_ms, run.accept_length))
                continue
            low, high = run.low, run.high
            times = [
                float(
                    cost.decode_ms(
                        b, run.draft, np.array([b * run.context_tokens]), drafter=run.speculative
                    )[0]
                )
                for b in (low, high)
            ]
            ms = times[0] + (run.point.load - low) * (times[1] - times[0])
            out.append(ms / run.accept_length)
        return np.array(out)


def predicted_tpot_ms(
    model: Bound | Scenario, points: Sequence[LoadPoint], terms: PassTerms | None = None
) -> np.ndarray:
    """Model TPOT (ms) of each run (see the module docstring); shape (len(points),): a run
    with its own job (``LoadPoint.job``) replayed through the same iteration cost
    (sim/calibration/run_job.py), the others by the closed form at their mean context.
    ``model``: the bound scenario (a scenario is bound here). ``terms``: the batched
    passes' token-count terms and the batch-1 hardware answers (sim/hardware/pass_terms.py
    ``PassTerms``, its ``passes`` memo) of the fit that asks at every step (None: the
    bound scenario's own); pure functions of frozen inputs, so the numbers are the same
    with or without them. A fit asking at many serving values binds ``TpotModel`` once."""
    return TpotModel(model, points, terms).tpot_ms()


def tpot_sigma_ms(point: LoadPoint) -> float:
    """A run's TPOT standard error for the fit: its own (std / sqrt(completed)) joined in
    quadrature with ``REL_FLOOR`` of the TPOT."""
    assert point.tpot_ms is not None
    se = point.tpot_se_ms or 0.0
    return math.sqrt(se * se + (REL_FLOOR * point.tpot_ms) ** 2)
