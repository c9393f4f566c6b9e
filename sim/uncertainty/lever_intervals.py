"""The 90% interval from inputs and model of a lever's value (``search --solve``): the
value of a scenario field reaching each target in every draw of the other inputs, with
its drivers and next measurement (``lever_uncertainty``).

The closed form is tabulated on a grid of lever values (``LEVER_GRID``, the scenario
re-validated at each) and every draw's cycle and accept length (``DrawnCycles``: a
chain's sampled closed forms, or a tree's own cycle with its tree rebuilt in each draw)
move it by their difference from the nominal at the current value; the crossing of each
target is interpolated (``_solve_on_grid``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import singledispatch
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.binding.bound import Bound, bind
from sim.binding.draft_binding import ChainBinding, TreeBinding
from sim.binding.inputs import conditioned, correlation_matrix, driver_rows, nominal_row
from sim.scenario.overrides import field_value, with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.answers import tree_draws
from sim.uncertainty.drivers import (
    MEASURE_SAMPLES,
    TOP_DRIVERS,
    Driver,
    MeasureNext,
    by_swing,
    measurement_for,
)
from sim.uncertainty.interval import INTERVAL_LABEL, SAMPLES, Interval, interval90_of, nan_none
from sim.uncertainty.sampled_draws import SampledScenario, sampled_draws

if TYPE_CHECKING:
    from sim.uncertainty.tree_sampled import TreeDraws

__all__ = ["LEVER_GRID", "DrawnCycles", "LeverUncertainty", "lever_uncertainty"]


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
        interval = interval90_of(answers(draws, target), cap=None)
        drivers = []
        if ends.size:
            at_ends = answers(ends, target)
            for j, inp in enumerate(ss.inputs):
                lo_in, hi_in = inp.ends()
                d = Driver(
                    inp.field,
                    lo_in,
                    hi_in,
                    nan_none(at_ends[2 * j]),
                    nan_none(at_ends[2 * j + 1]),
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
                after = interval90_of(answers(fixed, target), cap=None)
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
                nan_none(value),
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
    rates (``tree_draws``); the same draws are solved once (every target asks them)."""
    tree = tree_draws(drafting, base, ss, draws)
    solved: dict[bytes, TreeDraws] = {}

    def drawn(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = values.tobytes()
        answers = solved[key] = solved.get(key) or tree.answers(values)
        return answers.cycle_ms, answers.accept_length

    return drawn


def _lever_swing(d: Driver) -> float:
    if d.low is None or d.high is None:
        return np.inf
    return abs(d.high - d.low)


def _lever_width(interval: Interval) -> float:
    if interval.low is None or interval.high is None or interval.unreachable > 0.05:
        return np.inf
    return interval.high - interval.low
