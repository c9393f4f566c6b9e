"""The range an answer could really take, what it depends on, and what to measure next.

``answer_uncertainty`` draws the scenario's uncertain inputs (sim/uncertainty/sampled_draws.py:
stated errors and ranges, calibrated covariances, the acceptance decay prior, derived
compute's efficiency) at quasi-random points and re-solves the closed forms for every draw
at once (sim/model/sampled.py). For each target it reports:

* the 90% interval (5%-95% of the draws) of the answer, the first-position rate the target
  needs at the best k under the scenario's shape, with the mean rate over the chain and the
  flat (equal-rate) answer beside it; this is uncertainty from the inputs and the model
  (the shape's decay), not Monte Carlo noise, which the Monte Carlo's own intervals cover;
* the drivers: the answer with one input at its 5% and at its 95% end, the others at
  their nominal values, largest swing first;
* the measurement to take next: the input whose uncertainty, removed (measured and found
  at its current estimate), leaves the narrowest interval, with that interval.

For ``run`` it also gives the interval of tok/s and accept length at the scenario's k.
The interval: sim/uncertainty/interval.py; the drivers and the next measurement:
sim/uncertainty/drivers.py; a lever's value (``search --solve``):
sim/uncertainty/lever_intervals.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import singledispatch
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.binding.bound import Bound, bind
from sim.binding.draft_binding import ChainBinding, TreeBinding
from sim.binding.inputs import UncertainInput, study_rows
from sim.model.sampled import SampledModel, chain_answers
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.drivers import (
    MEASURE_SAMPLES,
    TOP_DRIVERS,
    Driver,
    MeasureNext,
    by_swing,
    measurement_for,
)
from sim.uncertainty.interval import INTERVAL_LABEL, SAMPLES, Interval, interval90_of, nan_none
from sim.uncertainty.sampled_draws import (
    MAX_STEPS,
    Drawn,
    SampledScenario,
    acceptance_propagated,
    sampled_draws,
)

if TYPE_CHECKING:
    from sim.uncertainty.tree_sampled import Populations, SampledTree

__all__ = [
    "MIX_NOTE",
    "TREE_NOTE",
    "TREE_POPULATION_NOTE",
    "OffCentre",
    "TargetUncertainty",
    "UncertaintyResult",
    "answer_uncertainty",
    "off_centre",
    "sampled_answers",
    "tree_draws",
]


@dataclass(frozen=True, slots=True)
class TargetUncertainty:
    """One target's answer with its 90% interval, drivers and next measurement."""

    tok_s: float
    best_num_steps: int | None
    first_rate: float | None
    mean_rate: float | None
    flat_alpha: float | None
    interval90: Interval
    mean_rate_interval90: Interval
    flat_interval90: Interval
    num_steps_range: tuple[int, int] | None
    drivers: tuple[Driver, ...]
    measure_next: MeasureNext | None
    #: first-position rate needed at k = 1..K (empty unless asked for: ``by_num_steps``)
    per_num_steps: tuple[Interval, ...]

    def to_dict(self) -> dict[str, Any]:
        """The per-target ``uncertainty`` block of every JSON document: ``interval90``,
        ``drivers: [{field, low, high, input_low, input_high}]``, ``measure_next: {what,
        field, interval90_after}``, and the nominal answer it is the interval of."""
        return {
            "label": INTERVAL_LABEL,
            "quantity": "first-position rate needed at the best k",
            "tok_s": self.tok_s,
            "best_num_steps": self.best_num_steps,
            "first_rate": self.first_rate,
            "mean_rate": self.mean_rate,
            "flat_alpha": self.flat_alpha,
            "interval90": self.interval90.to_list(),
            "unreachable_share": self.interval90.unreachable,
            "mean_rate_interval90": self.mean_rate_interval90.to_list(),
            "flat_interval90": self.flat_interval90.to_list(),
            "best_num_steps_range": list(self.num_steps_range) if self.num_steps_range else None,
            "drivers": [d.to_dict() for d in self.drivers],
            "measure_next": self.measure_next.to_dict() if self.measure_next else None,
        }


@dataclass(frozen=True, slots=True)
class OffCentre:
    """An uncertain input whose value as specified lies outside the 5-95% of its own
    range: answers as specified then sit at that end of their 90% intervals, or outside."""

    field: str
    nominal: float
    low: float  # its 5% end
    high: float  # its 95% end

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "nominal": self.nominal, "range90": [self.low, self.high]}


def off_centre(inputs: Sequence[UncertainInput]) -> tuple[OffCentre, ...]:
    """The ``inputs`` specified outside the 5-95% of their own ranges."""
    out = []
    for inp in inputs:
        lo, hi = inp.ends()
        if not lo <= inp.nominal <= hi:
            out.append(OffCentre(inp.field, float(inp.nominal), lo, hi))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class UncertaintyResult:
    """The answers of a scenario with their 90% intervals from inputs and model."""

    samples: int
    seed: int
    num_steps: int
    inputs: tuple[UncertainInput, ...]
    #: a tree scenario's: its own tok/s and accept length, its tree rebuilt in every draw
    #: (its targets' intervals are a chain's, ``TREE_NOTE``); None only when not solved
    tok_s_interval90: Interval | None
    accept_length_interval90: Interval | None
    targets: tuple[TargetUncertainty, ...]
    notes: tuple[str, ...]
    #: a tree scenario's best tree of the same budget, depth and width (the one ``specsim
    #: run`` prints beside SGLang's): its tok/s and accept length, rebuilt in every draw
    best_tree_tok_s_interval90: Interval | None = None
    best_tree_accept_length_interval90: Interval | None = None
    #: the ``inputs`` specified outside the 5-95% of their own ranges (``off_centre``): an
    #: answer as specified that lies outside its 90% interval lies there because of them
    off_centre_inputs: tuple[OffCentre, ...] = ()
    #: plain decoding's tok/s (1000 / decode_ms) in the same draws: whether a target below
    #: the nominal plain speed is surely reached without speculation
    baseline_tok_s_interval90: Interval | None = None

    def target(self, tok_s: float) -> TargetUncertainty | None:
        return next((t for t in self.targets if t.tok_s == tok_s), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": INTERVAL_LABEL,
            "method": f"{self.samples} Sobol draws (linear scramble and digital shift), seed "
            f"{self.seed}, closed forms re-solved per draw",
            "num_steps": self.num_steps,
            "inputs": [
                {
                    "field": u.field,
                    "nominal": u.nominal,
                    "kind": u.kind,
                    "stderr": u.stderr if u.kind == "normal" else None,
                    "range": list(u.spread) if u.spread is not None else None,
                    "origin": u.origin,
                }
                for u in self.inputs
            ],
            "tok_s_interval90": _listed(self.tok_s_interval90),
            "accept_length_interval90": _listed(self.accept_length_interval90),
            "baseline_tok_s_interval90": _listed(self.baseline_tok_s_interval90),
            "targets": [t.to_dict() for t in self.targets],
            "notes": list(self.notes),
        } | (
            {}
            if self.best_tree_tok_s_interval90 is None
            else {
                "best_tree_tok_s_interval90": _listed(self.best_tree_tok_s_interval90),
                "best_tree_accept_length_interval90": _listed(
                    self.best_tree_accept_length_interval90
                ),
            }
        )


def _listed(interval: Interval | None) -> list[float | None] | None:
    return None if interval is None else interval.to_list()


#: How a tree scenario's intervals are made.
TREE_NOTE = (
    "a tree: the targets' 90% intervals are the chain answers' (what a chain of its top-1 "
    "rates would need); the tree's own tok/s and accept length are re-solved in the same "
    "draws, SGLang's tree rebuilt from each draw's rates and its cycle from each draw's "
    "pass times"
)


#: A tree under a mix or a spread: its own intervals are not the targets' approximation.
TREE_POPULATION_NOTE = (
    "a tree under a mix or a per-request spread: its own tok/s and accept length take each "
    "draw's classes and spread as the nominal answer does (E[L] over requests, mixed with "
    "the class weights); the targets' (a chain's) take each draw's effective rates "
    "re-built the same way"
)


#: A chain under a mix or a spread: how its draws' rates are made.
MIX_NOTE = (
    "acceptance is a mix or has a per-request spread: in each distinct draw of its inputs "
    "the scenario is re-validated and the effective rates re-built as the nominal answer "
    "takes them (every class's means and Beta spread, E[c_i] / E[c_(i-1)] over requests); "
    "a draw the scenario rejects is left out and counted as missing"
)


def _target_uncertainty(
    scenario: Scenario,
    ss: SampledScenario,
    tok_s: float,
    head: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    per_k: tuple[Interval, ...],
    first_studies: np.ndarray,
    measure: list[tuple[int, slice]],
) -> TargetUncertainty:
    """One target's answer from what it needs at the best k (``head``: best k, first,
    mean and flat rates of the nominal row, then of the draws), the interval at every k
    (``per_k``, may be empty) and the first rate at the best k of the one-at-a-time draws
    (``first_studies``: the drivers' ends, rows 2j, 2j + 1: input j at its 5% and 95%
    end, then input j measured, rows ``measure``)."""
    k_nom, first_nom, mean_nom, flat_nom = (a[:1] for a in head)
    k, first, mean, flat = (a[1:] for a in head)
    interval = interval90_of(first)
    reachable = k > 0
    k_range = (
        (int(np.quantile(k[reachable], 0.05)), int(np.quantile(k[reachable], 0.95)))
        if reachable.any()
        else None
    )
    first_ends = first_studies  # drivers: each input alone at its two ends
    drivers = []
    for j, inp in enumerate(ss.inputs):
        lo_in, hi_in = inp.ends()
        d = Driver(
            inp.field, lo_in, hi_in, nan_none(first_ends[2 * j]), nan_none(first_ends[2 * j + 1])
        )
        if d.swing > 1e-6:
            drivers.append(d)
    drivers = by_swing(drivers, lambda d: d.swing)
    best_k = int(k_nom[0]) if k_nom[0] > 0 else None
    measure_next = None
    candidates = []
    for j, rows in measure:
        candidates.append((j, interval90_of(first_studies[rows])))
    if candidates:
        j, after = min(candidates, key=lambda c: (c[1].width, c[0]))
        if after.width < interval.width - 1e-9:
            field = ss.inputs[j].field
            measure_next = MeasureNext(measurement_for(field, scenario, best_k), field, after)
    return TargetUncertainty(
        tok_s=tok_s,
        best_num_steps=best_k,
        first_rate=nan_none(first_nom[0]),
        mean_rate=nan_none(mean_nom[0]),
        flat_alpha=nan_none(flat_nom[0]),
        interval90=interval,
        mean_rate_interval90=interval90_of(mean),
        flat_interval90=interval90_of(flat),
        num_steps_range=k_range,
        drivers=tuple(drivers[:TOP_DRIVERS]),
        measure_next=measure_next,
        per_num_steps=per_k,
    )


def answer_uncertainty(
    bound: Bound,
    targets: Sequence[float] | None = None,
    *,
    samples: int = SAMPLES,
    seed: int | None = None,
    max_steps: int = MAX_STEPS,
    num_steps: Sequence[int] | None = None,
    by_num_steps: bool = False,
    populations: Populations | None = None,
) -> UncertaintyResult:
    """Every target's answer with its 90% interval, drivers and next measurement, and the
    interval of tok/s and accept length at the scenario's own k (see the module
    docstring). The best k is chosen among ``num_steps`` (default 1..``max_steps``).
    ``by_num_steps``: also the interval of the first rate needed at every k
    (``TargetUncertainty.per_num_steps``, empty otherwise: only the best k is solved).
    ``seed`` defaults to ``simulation.seed``; the same seed gives the same draws.

    A tree scenario (topk > 1): its targets are asked of a chain of its top-1 rates at its
    num_steps (sim/studies/analysis.py, search), so they get that chain's intervals; the
    tree's own tok/s and accept length are re-solved in the same draws with SGLang's tree
    rebuilt from each draw's rates (sim/uncertainty/tree_sampled.py, ``TREE_NOTE``); under a
    mix or a spread from each draw's classes, kept in ``populations`` when given (calls
    on scenarios that differ elsewhere share them). The draws perturb the bound scenario
    and bind each (sim/uncertainty/sampled_draws.py)."""
    chain = _targets_chain(bound.drafting, bound)
    result, ss, draws = _chain_uncertainty(
        chain, targets, samples, seed, max_steps, num_steps, by_num_steps, populations
    )
    return _own_answers(bound.drafting, bound, result, ss, draws, populations)


@singledispatch
def _targets_chain(drafting: ChainBinding | TreeBinding, bound: Bound) -> Bound:
    """The chain the targets are asked of: a chain's own bound model."""
    return bound


@_targets_chain.register(TreeBinding)
def _tree_targets_chain(drafting: TreeBinding, bound: Bound) -> Bound:
    """A tree's targets are asked of the chain of its top-1 rates at its num_steps, bound
    once here."""
    return bind(with_overrides(bound.scenario, {"speculation.topk": 1}, source="uncertainty"))


@singledispatch
def _own_answers(
    drafting: ChainBinding | TreeBinding, bound: Bound, chain: UncertaintyResult, *_: object
) -> UncertaintyResult:
    """A chain's own tok/s and accept length are its targets' chain's: ``chain`` as it is
    (its sampled scenario, draws and populations, which a tree reads, are not needed)."""
    return chain


@_own_answers.register(TreeBinding)
def _tree_uncertainty(
    drafting: TreeBinding,
    bound: Bound,
    chain: UncertaintyResult,
    ss: SampledScenario,
    draws: np.ndarray,
    populations: Populations | None = None,
) -> UncertaintyResult:
    """``chain``'s answers (the targets') with the tree's own tok/s and accept length
    re-solved in the chain's draws ``draws`` (n, F) of its inputs (``ss``)."""
    from sim.binding.tree_analysis import best_tree_acceptance  # lazy: trees only

    scenario = bound.scenario
    sampled = tree_draws(drafting, bound, ss, draws, populations)
    tree = sampled.answers(draws)
    best = replace(sampled, nominal=best_tree_acceptance(scenario, sampled.nominal))
    best_tree = best.answers(draws)
    notes = (*chain.notes, TREE_NOTE)
    if not acceptance_propagated(scenario):
        notes = (*notes, TREE_POPULATION_NOTE)
    return replace(
        chain,
        tok_s_interval90=interval90_of(tree.tok_s, cap=None),
        accept_length_interval90=interval90_of(tree.accept_length, cap=None),
        notes=notes,
        best_tree_tok_s_interval90=interval90_of(best_tree.tok_s, cap=None),
        best_tree_accept_length_interval90=interval90_of(best_tree.accept_length, cap=None),
    )


def _chain_uncertainty(
    bound: Bound,
    targets: Sequence[float] | None,
    samples: int,
    seed: int | None,
    max_steps: int,
    num_steps: Sequence[int] | None,
    by_num_steps: bool,
    drawn: Drawn | None = None,
) -> tuple[UncertaintyResult, SampledScenario, np.ndarray]:
    """``answer_uncertainty`` of a chain, with its sampled scenario and its draws (n, F);
    a mix's or a spread's drawn rates kept in ``drawn`` when given."""
    scenario = bound.scenario
    seed = scenario.simulation.seed if seed is None else seed
    tgts = [float(t) for t in (targets if targets is not None else scenario.target_tok_s)]
    if num_steps is None and scenario.num_steps > max_steps:
        # the best k is still chosen in 1..max_steps; the model reaches the scenario's own k
        num_steps = range(1, max_steps + 1)
    if num_steps is not None:
        max_steps = max(max(num_steps), scenario.num_steps, 1)
    ss, draws = sampled_draws(bound, samples, seed, max_steps, drawn)
    propagated = acceptance_propagated(scenario)
    # every row through the closed forms' inputs at once (rows are independent, so this
    # is one pass, not 2 + F): the nominal row, the draws, the drivers' ends, then each
    # input measured (its first MEASURE_SAMPLES draws with it fixed at its estimate)
    rows, measure = study_rows(scenario, ss.inputs, draws, MEASURE_SAMPLES if tgts else 0)
    every = ss.model(rows)
    k = scenario.num_steps
    chain = chain_answers(every, draws.shape[0], tgts, k, num_steps, by_num_steps)
    if by_num_steps:
        per_k = [
            tuple(interval90_of(r.first_rate[1:, j]) for j in range(r.need.shape[1]))
            for r in chain.solved
        ]
    else:
        per_k = [()] * len(tgts)
    notes = []
    if not propagated:
        notes.append(MIX_NOTE)
    if not ss.inputs:
        notes.append("no uncertain input: every interval is the nominal answer")
    result = UncertaintyResult(
        samples=samples,
        seed=seed,
        num_steps=k,
        inputs=ss.inputs,
        tok_s_interval90=interval90_of(chain.tok_s, cap=None),
        accept_length_interval90=interval90_of(chain.accept_length, cap=None),
        targets=tuple(
            _target_uncertainty(scenario, ss, *answers, measure)
            for answers in zip(tgts, chain.bests, per_k, chain.firsts, strict=True)
        ),
        notes=tuple(notes),
        off_centre_inputs=off_centre(ss.inputs),
        baseline_tok_s_interval90=interval90_of(
            every.rows(slice(1, 1 + draws.shape[0])).tok_s(0), cap=None
        ),
    )
    return result, ss, draws


def tree_draws(
    drafting: TreeBinding,
    base: Bound,
    ss: SampledScenario,
    draws: np.ndarray,
    populations: Populations | None = None,
) -> SampledTree:
    """A tree scenario's ``SampledTree`` in the draws ``draws`` of ``ss``'s inputs."""
    from sim.uncertainty.tree_sampled import sampled_tree  # lazy: trees only

    return sampled_tree(
        base,
        draws,
        inputs=ss.inputs,
        max_steps=ss.max_steps,
        populations=populations,
    )


def sampled_answers(
    scenario: Scenario, *, samples: int = SAMPLES, seed: int | None = None
) -> SampledModel:
    """The closed forms' inputs in every draw of the scenario's uncertain inputs, for the
    interval of any quantity (draft lengths 1..``MAX_STEPS``)."""
    seed = scenario.simulation.seed if seed is None else seed
    bound = bind(scenario)
    ss, draws = sampled_draws(bound, samples, seed)
    return ss.model(draws)
