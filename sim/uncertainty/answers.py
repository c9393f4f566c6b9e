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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import singledispatch
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.binding.bind import ChainBinding, TreeBinding
from sim.binding.bound import Bound, bind
from sim.binding.inputs import (
    UncertainInput,
    conditioned,
    correlation_matrix,
    driver_rows,
    nominal_row,
    study_rows,
)
from sim.model.sampled import SampledModel, chain_answers
from sim.scenario.overrides import field_value, with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.sampled_draws import (
    MAX_STEPS,
    Drawn,
    SampledScenario,
    acceptance_propagated,
    sampled_draws,
)

if TYPE_CHECKING:
    from sim.uncertainty.tree_sampled import Populations, SampledTree, TreeDraws

#: Draws of the inputs (a power of 2, as scrambled Sobol points want).
SAMPLES = 256
#: Draws per input when measuring what removing its uncertainty would leave.
MEASURE_SAMPLES = 128
#: Drivers reported per answer.
TOP_DRIVERS = 4
INTERVAL_LABEL = "90% interval from inputs and model"
_UNREACHABLE = 2.0  # a rate above 1 codes "out of reach" inside quantiles


@dataclass(frozen=True, slots=True)
class Interval:
    """A 90% interval (5% and 95% quantiles); an end None is out of reach (no k reaches
    the target in that share of draws); ``unreachable`` the share of such draws."""

    low: float | None
    high: float | None
    unreachable: float = 0.0

    def to_list(self) -> list[float | None]:
        return [self.low, self.high]

    @property
    def width(self) -> float:
        lo = 1.0 if self.low is None else self.low
        hi = 1.0 + (1.0 - lo) if self.high is None else self.high
        return hi - lo


def _interval(values: np.ndarray, cap: float | None = 1.0) -> Interval:
    """5-95% of ``values`` (n,); NaN values are out of reach (above every rate)."""
    v = np.where(np.isnan(values), _UNREACHABLE if cap is not None else np.inf, values)
    share = float(np.mean(np.isnan(values)))
    if cap is None:
        lo, hi = (
            np.quantile(v[np.isfinite(v)], [0.05, 0.95]) if np.isfinite(v).any() else (None, None)
        )
        return Interval(_f(lo), _f(hi), share)
    lo, hi = np.quantile(v, [0.05, 0.95])
    return Interval(_rate(lo, cap), _rate(hi, cap), share)


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


#: Significant digits at which two drivers' swings count as tied.
SWING_DIGITS = 12


def by_swing(drivers: list[Driver], swing: Callable[[Driver], float]) -> list[Driver]:
    """``drivers`` widest ``swing`` first; swings equal to ``SWING_DIGITS`` significant
    digits are tied and keep their order (the inputs'): two inputs of mirrored effect (a
    perfectly anti-correlated pair) are not ordered by rounding."""
    return sorted(drivers, key=lambda d: -float(f"{swing(d):.{SWING_DIGITS}g}"))


def _rate(x: float, cap: float) -> float | None:
    return None if x > cap + 1e-9 else float(min(x, cap))


@dataclass(frozen=True, slots=True)
class Driver:
    """One input's swing: the answer with the input at its low and its high end."""

    field: str
    input_low: float
    input_high: float
    low: float | None
    high: float | None

    @property
    def swing(self) -> float:
        lo = _UNREACHABLE if self.low is None else self.low
        hi = _UNREACHABLE if self.high is None else self.high
        return abs(hi - lo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "input_low": self.input_low,
            "input_high": self.input_high,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True, slots=True)
class MeasureNext:
    """The one measurement that narrows the interval most, and the interval it leaves if
    it comes out at the current estimate."""

    what: str
    field: str
    interval90_after: Interval

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "field": self.field,
            "interval90_after": self.interval90_after.to_list(),
        }


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


# --------------------------------------------------------------------------- what to measure


def _position_counts(scenario: Scenario) -> str:
    """What the scenario's engine exposes of how many drafts each verify step accepted
    (``server.engine``; none: vLLM's, as before). vLLM: the per-position acceptance
    counters of its /metrics. SGLang (sgl-project/sglang tokenizer_manager.py, v0.5.23): each
    finished request's ``meta_info.spec_correct_drafts_histogram`` (``spec_accept_histogram``
    before), entry j the verify steps that accepted exactly j drafts, so the steps accepting
    at least j over all steps is position j's cumulative rate. TensorRT-LLM: the
    engine-neutral count of the same."""
    engine = scenario.server.engine
    if engine == "sglang":
        return (
            "SGLang's per-request meta_info spec_correct_drafts_histogram (spec_accept_histogram"
            " before v0.5.23; steps accepting >= j drafts over all steps)"
        )
    if engine == "trtllm":
        return (
            "how many drafts each verify step accepted (steps accepting at least j drafts "
            "over all steps)"
        )
    return "vLLM's per-position counters"


def measurement_for(field: str, scenario: Scenario, best_k: int | None) -> str:
    """The measurement that pins ``field`` down, in the words of an inference engineer."""
    k = best_k or max(scenario.num_steps + 2, 4)
    k0 = scenario.num_steps
    m0 = scenario.timing.verify_tokens or k0 + 1
    if field in ("timing.verify_ms_per_extra_token", "hardware.bandwidth_efficiency"):
        kv = k if k + 1 != m0 else max(m0 + 1, 4)  # another length than the one timed
        return (
            f"time a verify pass at num_steps {kv} ({kv + 1} tokens; measured only at {m0}): "
            "the per-token slope"
        )
    if field in ("acceptance.decay", "acceptance.tilt"):
        spec = scenario.acceptance
        measured = (spec.measured_num_steps if spec is not None else None) or k0
        ka = k if k != measured else max(measured + 2, 4)  # not the num_steps measured
        return (
            f"measure the accept length at another num_steps (e.g. {ka}), or read "
            f"{_position_counts(scenario)} at K >= 4: how acceptance falls with position"
        )
    if field.startswith("acceptance.per_position"):
        return f"read {_position_counts(scenario)} over more drafts"
    if field.startswith("acceptance."):
        return f"measure the accept length at num_steps {k0} over more requests"
    named = {
        "timing.draft_step_ms": "time one drafter decode step (a profile of the draft passes)",
        "timing.draft_extend_ms": "time the draft-extend pass",
        "timing.cycle_overhead_ms": "time whole cycles at two num_steps (tok/s with their "
        "accept lengths): the per-cycle overhead",
        "timing.verify_ms": f"time the verify pass over {m0} tokens again",
        "timing.decode_ms": "time plain decoding again",
    }
    return named.get(field, f"measure {field}")


# --------------------------------------------------------------------------- the study


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
    interval = _interval(first)
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
            inp.field, lo_in, hi_in, _nan_none(first_ends[2 * j]), _nan_none(first_ends[2 * j + 1])
        )
        if d.swing > 1e-6:
            drivers.append(d)
    drivers = by_swing(drivers, lambda d: d.swing)
    best_k = int(k_nom[0]) if k_nom[0] > 0 else None
    measure_next = None
    candidates = []
    for j, rows in measure:
        candidates.append((j, _interval(first_studies[rows])))
    if candidates:
        j, after = min(candidates, key=lambda c: (c[1].width, c[0]))
        if after.width < interval.width - 1e-9:
            field = ss.inputs[j].field
            measure_next = MeasureNext(measurement_for(field, scenario, best_k), field, after)
    return TargetUncertainty(
        tok_s=tok_s,
        best_num_steps=best_k,
        first_rate=_nan_none(first_nom[0]),
        mean_rate=_nan_none(mean_nom[0]),
        flat_alpha=_nan_none(flat_nom[0]),
        interval90=interval,
        mean_rate_interval90=_interval(mean),
        flat_interval90=_interval(flat),
        num_steps_range=k_range,
        drivers=tuple(drivers[:TOP_DRIVERS]),
        measure_next=measure_next,
        per_num_steps=per_k,
    )


def _nan_none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


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


# The chain or the tree, decided once by ``bind`` (``Bound.drafting``), is dispatched on here.


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
    sampled = _tree_draws(drafting, bound, ss, draws, populations)
    tree = sampled.answers(draws)
    best = replace(sampled, nominal=best_tree_acceptance(scenario, sampled.nominal))
    best_tree = best.answers(draws)
    notes = (*chain.notes, TREE_NOTE)
    if not acceptance_propagated(scenario):
        notes = (*notes, TREE_POPULATION_NOTE)
    return replace(
        chain,
        tok_s_interval90=_interval(tree.tok_s, cap=None),
        accept_length_interval90=_interval(tree.accept_length, cap=None),
        notes=notes,
        best_tree_tok_s_interval90=_interval(best_tree.tok_s, cap=None),
        best_tree_accept_length_interval90=_interval(best_tree.accept_length, cap=None),
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
            tuple(_interval(r.first_rate[1:, j]) for j in range(r.need.shape[1]))
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
        tok_s_interval90=_interval(chain.tok_s, cap=None),
        accept_length_interval90=_interval(chain.accept_length, cap=None),
        targets=tuple(
            _target_uncertainty(scenario, ss, *answers, measure)
            for answers in zip(tgts, chain.bests, per_k, chain.firsts, strict=True)
        ),
        notes=tuple(notes),
        off_centre_inputs=off_centre(ss.inputs),
    )
    return result, ss, draws


# --------------------------------------------------------------------------- any lever

#: Values of the lever at which the closed form is tabulated for the per-draw solve.
LEVER_GRID = 48


@dataclass(frozen=True, slots=True)
class LeverUncertainty:
    """One target's lever value with its 90% interval, drivers and next measurement."""

    tok_s: float
    value: float | None
    interval90: Interval
    drivers: tuple[Driver, ...]
    measure_next: MeasureNext | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": INTERVAL_LABEL,
            "quantity": "lever value reaching the target (closed form)",
            "tok_s": self.tok_s,
            "value": self.value,
            "interval90": self.interval90.to_list(),
            "unreachable_share": self.interval90.unreachable,
            "drivers": [d.to_dict() for d in self.drivers],
            "measure_next": self.measure_next.to_dict() if self.measure_next else None,
        }


def _lever_grid(v0: float, hints: Sequence[float], domain: tuple[float, float]) -> np.ndarray:
    points = [v for v in (v0, *hints) if v is not None and np.isfinite(v)]
    lo = max(domain[0], min(points) / 4.0)
    hi = min(domain[1], max(points) * 4.0)
    if lo > 0:
        return np.unique(np.concatenate([np.geomspace(lo, hi, LEVER_GRID), points]))
    return np.unique(np.concatenate([np.linspace(lo, hi, LEVER_GRID), points]))


def _solve_on_grid(grid: np.ndarray, tok: np.ndarray, target: float, sign: int) -> np.ndarray:
    """Per draw (rows of ``tok``, shape (n, G)), the least-effort grid-interpolated lever
    value with tok/s >= target: the lowest value when raising helps (``sign`` > 0), the
    highest when lowering does; NaN when no grid value reaches it."""
    ok = tok >= target
    n, g = tok.shape
    out = np.full(n, np.nan)
    if sign > 0:
        first = np.where(ok.any(axis=1), ok.argmax(axis=1), -1)
    else:
        first = np.where(ok.any(axis=1), g - 1 - ok[:, ::-1].argmax(axis=1), -1)
    rows = np.arange(n)
    for i in rows[first >= 0]:
        j = first[i]
        nb = j - 1 if sign > 0 else j + 1
        if 0 <= nb < g and tok[i, nb] < target:
            t = (target - tok[i, nb]) / (tok[i, j] - tok[i, nb])
            out[i] = grid[nb] + t * (grid[j] - grid[nb])
        else:
            out[i] = grid[j]
    return out


def lever_uncertainty(
    scenario: Scenario,
    field: str,
    targets: Sequence[float],
    *,
    sign: int,
    domain: tuple[float, float],
    hints: Sequence[float | None] = (),
    samples: int = SAMPLES,
    seed: int | None = None,
) -> tuple[LeverUncertainty, ...]:
    """The value of ``field`` reaching each target in every draw of the other inputs (the
    lever's own uncertainty left out: it is being solved for), at the scenario's k.

    The closed form is tabulated on a grid of lever values (the scenario re-validated at
    each) and every draw's cycle and accept length move it by their difference from the
    nominal at the current value (additive); the crossing of each target is interpolated.
    A tree: the tree's own cycle and accept length in every draw, its tree rebuilt
    (sim/uncertainty/tree_sampled.py). ``sign`` > 0: raising the lever helps.
    """

    seed = scenario.simulation.seed if seed is None else seed
    v0 = float(field_value(scenario, field))
    base = with_overrides(scenario, {field: field_value(scenario, field)}, source="uncertainty")
    k = base.num_steps
    nominal = bind(base)  # the lever at its own value, bound once
    ss, draws = sampled_draws(nominal, samples, seed)
    integer = isinstance(field_value(scenario, field), int)
    grid = _lever_grid(v0, [h for h in hints if h is not None], domain)
    if integer:
        grid = np.unique(np.round(grid))
    cycles, als, kept = [], [], []
    for v in grid:
        try:
            at = bind(
                with_overrides(base, {field: int(v) if integer else float(v)}, source="solve")
            )
        except Exception:
            continue
        kept.append(v)
        al = at.accept_length if k > 0 else 1.0
        cycles.append(
            at.cost.at_accept_length(al).total_ms if k > 0 else 1000.0 / at.closed_form_tok_s
        )
        als.append(al)
    grid = np.array(kept)
    cyc_nom, al_nom = np.array(cycles), np.array(als)
    nominal_values = nominal_row(ss.inputs)
    at_v0 = int(np.argmin(np.abs(grid - v0)))

    drawn = _drawn_cycles(nominal.drafting, nominal, ss, draws)

    def tok_table(values: np.ndarray) -> np.ndarray:
        cycle_ms, accept_length = drawn(values)
        d_cycle = cycle_ms - cyc_nom[at_v0]
        d_al = accept_length - al_nom[at_v0]
        cyc = np.maximum(cyc_nom[None, :] + d_cycle[:, None], 1e-9)
        return 1000.0 * (al_nom[None, :] + d_al[:, None]) / cyc

    def answers(values: np.ndarray, target: float) -> np.ndarray:
        return _solve_on_grid(grid, tok_table(values), target, sign)

    ends = driver_rows(base, ss.inputs)
    corr = correlation_matrix(base, ss.inputs)
    out = []
    for target in targets:
        value = answers(nominal_values, target)[0]
        interval = _interval(answers(draws, target), cap=None)
        drivers = []
        if ends.size:
            at_ends = answers(ends, target)
            for j, inp in enumerate(ss.inputs):
                lo_in, hi_in = inp.ends()
                d = Driver(
                    inp.field,
                    lo_in,
                    hi_in,
                    _nan_none(at_ends[2 * j]),
                    _nan_none(at_ends[2 * j + 1]),
                )
                if d.low is None and d.high is None:
                    continue  # out of reach at both ends: says nothing
                if d.low is None or d.high is None or abs(d.high - d.low) > 1e-9 * max(abs(v0), 1):
                    drivers.append(d)
        drivers = by_swing(drivers, _lever_swing)
        measure_next = None
        if ss.inputs:
            few = draws[:MEASURE_SAMPLES]
            best = None
            for j, inp in enumerate(ss.inputs):
                fixed = conditioned(ss.inputs, corr, few, j, inp.nominal)
                after = _interval(answers(fixed, target), cap=None)
                width = _lever_width(after)
                if best is None or width < best[0]:
                    best = (width, j, after)
            if best is not None and best[0] < _lever_width(interval) - 1e-12:
                _, j, after = best
                name = ss.inputs[j].field
                measure_next = MeasureNext(measurement_for(name, base, k), name, after)
        out.append(
            LeverUncertainty(
                float(target),
                _nan_none(value),
                interval,
                tuple(drivers[:TOP_DRIVERS]),
                measure_next,
            )
        )
    return tuple(out)


#: A study's cycle (ms) and accept length in each draw ``values`` (n, F), each (n,).
DrawnCycles = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@singledispatch
def _drawn_cycles(
    drafting: ChainBinding | TreeBinding, base: Bound, ss: SampledScenario, draws: np.ndarray
) -> DrawnCycles:
    """A chain's cycle and accept length at its k in each draw (the sampled closed forms;
    k = 0: the decode step, one token)."""
    k = base.num_steps

    def drawn(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        model = ss.model(values)
        if k == 0:
            return model.decode_ms, np.ones(values.shape[0])
        return model.cycle_ms(k), model.accept_length(k)

    return drawn


@_drawn_cycles.register(TreeBinding)
def _tree_drawn_cycles(
    drafting: TreeBinding, base: Bound, ss: SampledScenario, draws: np.ndarray
) -> DrawnCycles:
    """A tree's own cycle and accept length in each draw, its tree rebuilt from each draw's
    rates (``_tree_draws``); the same draws are solved once (every target asks them)."""
    tree = _tree_draws(drafting, base, ss, draws)
    solved: dict[bytes, TreeDraws] = {}

    def drawn(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = values.tobytes()
        answers = solved[key] = solved.get(key) or tree.answers(values)
        return answers.cycle_ms, answers.accept_length

    return drawn


def _tree_draws(
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


def _lever_swing(d: Driver) -> float:
    if d.low is None or d.high is None:
        return np.inf
    return abs(d.high - d.low)


def _lever_width(interval: Interval) -> float:
    if interval.low is None or interval.high is None or interval.unreachable > 0.05:
        return np.inf
    return interval.high - interval.low


def sampled_answers(
    scenario: Scenario, *, samples: int = SAMPLES, seed: int | None = None
) -> SampledModel:
    """The closed forms' inputs in every draw of the scenario's uncertain inputs, for the
    interval of any quantity (draft lengths 1..``MAX_STEPS``)."""
    seed = scenario.simulation.seed if seed is None else seed
    bound = bind(scenario)
    ss, draws = sampled_draws(bound, samples, seed)
    return ss.model(draws)
