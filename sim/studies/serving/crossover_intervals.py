"""A crossing's 90% interval from inputs and model, and where refining cannot move it.

The draws' crossings of a crossing found in a grid cell (``draw_crossings``: each draw's
gains interpolated linearly; ``draws_range``: their 5-95%), joined with the crossing's
Monte Carlo interval (``crossing_interval90``; ``sourced_crossing_interval90`` with what
it holds, sim/studies/serving/draw_intervals.py ``IntervalSources``); the loads where the
gain's model-error band holds 1 (``model_band``, with the scenario's term at a load:
``model_error_at``); the loads a bisection may stop inside without moving the interval
(``within_range``). Used by
sim/studies/serving/crossover.py and sim/studies/serving/controller_draws.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from sim.model.model_error import GainParameterLaw
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.break_even import STOPS, Crossing
from sim.studies.serving.draw_intervals import IntervalSources, sources90
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.uncertainty.model_error import ModelErrorTerm, TermOrigin, crossing_band

__all__ = [
    "crossing_interval90",
    "draw_crossings",
    "draws_range",
    "model_band",
    "model_error_at",
    "sourced_crossing_interval90",
    "within_range",
]


def within_range(
    drawn: tuple[float, ...], band: tuple[float | None, float | None], a: float, b: float
) -> tuple[float, float] | None:
    """The loads a crossing's bisections in the grid cell (a, b) may stop inside without
    moving its 90% interval (``find_crossings``' ``within``): the draws' 5-95% of its
    crossing ``drawn`` (empty: no draw crosses), and where the gain's model-error band
    holds 1 over the whole cell (``band``, ``model_band`` at any load of the cell: a
    crossing anywhere in the cell then has that band, which its 90% interval joins), the
    hull of the two (an open end of the band: unbounded). None: neither."""
    covers = (band[0] is None or band[0] <= a) and (band[1] is None or band[1] >= b)
    if not covers:
        return (drawn[0], drawn[1]) if drawn else None
    lo = -math.inf if band[0] is None else band[0]
    hi = math.inf if band[1] is None else band[1]
    if drawn:
        lo, hi = min(lo, drawn[0]), max(hi, drawn[1])
    return (lo, hi)


def model_error_at(
    evaluator: PointEvaluator, grid: Sequence[Load], draws: DrawnPoints | None
) -> Callable[..., ModelErrorTerm]:
    """The scenario's model-error term at a load of the grid (at the larger mean decode
    batch of the policies run there; ``batch`` given: at that batch)."""
    term = None
    if draws is not None and isinstance(evaluator.builder, ScenarioPlans):
        term = evaluator.builder.model_error

    def at(x: float | None, batch: float | None = None) -> ModelErrorTerm:
        if batch is None:
            assert x is not None
            runs = [p for (load, _), p in evaluator.memo.items() if load == grid[0].at(x)]
            batch = max((float(p.mean_batch.mean()) for p in runs), default=1.0)
        if term is None:  # code-built plans: no scenario, no term
            none = GainParameterLaw(0.0, 1.0, 0.0, 0.0, 0.0)
            return ModelErrorTerm(0.0, none, TermOrigin.caller("none: no scenario"), batch, (1.0,))
        return term.at(batch)

    return at


def model_band(
    xs: Sequence[float],
    curve: Callable[[float], Ratio],
    at: float,
    term_at: Callable[..., ModelErrorTerm],
) -> tuple[float | None, float | None]:
    """The loads around the crossing at ``at`` where the gain's model-error band holds 1
    (sim/uncertainty/model_error.py ``crossing_band``)."""
    gains = [curve(x).mean for x in xs]
    if len(xs) < 2 or min(gains) <= 0:
        return (at, at)
    return crossing_band(xs, gains, [term_at(x).gain_sigma for x in xs], at)


def crossing_interval90(
    draws: DrawnPoints, grid: Sequence[Load], k: int, metric: str, c: Crossing, versus: int = 0
) -> tuple[float | None, float | None]:
    """The 90% interval from inputs and model of crossing ``c``: the draws' crossings'
    5-95% (``draws_range``) joined with the crossing's Monte Carlo interval; for users
    each end the fewest users on the new side (rounded up). ``versus``: the gain of k
    over this k (default plain decoding), as a best-k table's switch between two k."""
    return sourced_crossing_interval90(draws, grid, k, metric, c, versus)[0]


def sourced_crossing_interval90(
    draws: DrawnPoints, grid: Sequence[Load], k: int, metric: str, c: Crossing, versus: int = 0
) -> tuple[tuple[float | None, float | None], IntervalSources]:
    """``crossing_interval90`` and what it holds (``sources90`` of the draws that answered
    in the crossing's cell: fewer than two, the Monte Carlo interval with the one draw's
    crossing)."""
    xs = [float(x.value) for x in grid]
    below = [j for j, x in enumerate(xs) if x <= c.at]
    i = min(below[-1] if below else 0, len(xs) - 2)
    crossed = draw_crossings(draws, grid, k, metric, i, c.direction, versus)
    found = draws_range(crossed)
    lo_mc, hi_mc = c.ci95
    ends = [-math.inf if lo_mc is None else lo_mc, math.inf if hi_mc is None else hi_mc]
    low, high = min([*ends, *found]), max([*ends, *found])
    if grid[0].integer:  # users: the fewest on the new side, as the crossing itself
        low, high = (math.ceil(x) if math.isfinite(x) else x for x in (low, high))
    out = (None if not math.isfinite(low) else low, None if not math.isfinite(high) else high)
    return out, sources90(len(crossed), c.ci95, draws.uncertain)


def draws_range(crossings: Sequence[float]) -> tuple[float, ...]:
    """The 5% and 95% quantiles of the draws' crossings ``crossings`` (``draw_crossings``;
    empty: no draw answers), quantiles that are draws' values: an open end stays
    infinite, never NaN."""
    if not crossings:
        return ()
    return tuple(
        float(q) for q in np.quantile(list(crossings), [0.05, 0.95], method="inverted_cdf")
    )


def draw_crossings(
    draws: DrawnPoints,
    grid: Sequence[Load],
    k: int,
    metric: str,
    i: int,
    direction: str,
    versus: int = 0,
) -> tuple[float, ...]:
    """The crossings in ``direction`` of the draws that answer (a draw the scenario rejects
    has none), of a crossing found in the grid cell (grid[i], grid[i + 1]): each draw's
    gains at the cell's two loads, and for a draw that does not cross between them the
    next grid load outwards on the side it crosses, until it does (past the grid: -inf or
    inf); its crossing in the same direction interpolated linearly. It depends on the
    cell alone, not on where in it the crossing is refined to."""
    xs = [float(x.value) for x in grid]
    stops = direction == STOPS
    gains: dict[int, np.ndarray] = {}

    def at(j: int, which: list[int]) -> np.ndarray:
        got = draws.gains(grid[j], k, metric, which, versus)
        if j in gains:
            got = np.where(np.isnan(got), gains[j], got)
        gains[j] = got
        return got

    at(i, list(range(len(draws.draws))))
    at(i + 1, list(range(len(draws.draws))))
    span = {d: (i, i + 1) for d in range(len(draws.draws))}
    found: dict[int, float] = {}
    while span:
        early, late = [], []
        for d, (lo, hi) in span.items():
            g = np.array([gains[j][d] for j in range(lo, hi + 1)])
            if not np.all(np.isfinite(g)):
                continue  # a draw the scenario rejects
            x = _crossing_of(xs[lo : hi + 1], g, stops)
            if x == -math.inf and lo > 0:
                early.append(d)
            elif x == math.inf and hi < len(xs) - 1:
                late.append(d)
            else:
                found[d] = x
        span = {d: (span[d][0] - 1, span[d][1]) for d in early} | {
            d: (span[d][0], span[d][1] + 1) for d in late
        }
        for j in sorted({lo for lo, _ in span.values()} | {hi for _, hi in span.values()}):
            need = [d for d, (lo, hi) in span.items() if j in (lo, hi)]
            at(j, need)
    return tuple(found.values())


def _crossing_of(xs: Sequence[float], g: np.ndarray, stops: bool) -> float:
    """Where gains ``g`` at loads ``xs`` first cross 1 in the direction (``stops``: from
    >= 1 to < 1), interpolated linearly; -inf before the first load, inf after the last."""
    side = g >= 1.0 if stops else g < 1.0  # the old side
    if not side[0]:
        return -math.inf
    for j in range(len(xs) - 1):
        if side[j] and not side[j + 1]:
            t = (g[j] - 1.0) / (g[j] - g[j + 1])
            return xs[j] + t * (xs[j + 1] - xs[j])
    return math.inf
