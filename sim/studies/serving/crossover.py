"""Up to which load speculative decoding pays: the crossover of each metric, per k.

For each draft length k and each metric (per-user tok/s, aggregate tok/s, TPOT p50 and
p99; sim/studies/serving/paired_metrics.py ``METRICS``) the paired gain of speculation at k over
plain decoding is simulated on a grid of loads (closed-loop users or Poisson rates) and
its crossings through 1 are located with 95% intervals (sim/studies/serving/break_even.py). Every
(load, k) is the scenario at that load and ``speculation.num_steps = k`` simulated at the
scenario's seed (sim/studies/serving/scenario_plans.py), which is what ``sweep`` over
``serving.concurrency`` and ``speculation.num_steps`` simulates: the curves are the same.

Rates above a policy's service bound (sim/simulation/serving/stability.py: the most
requests a second it can answer) have no steady state and are not simulated: where
speculation at k is above its bound and plain decoding is not, plain decoding wins at that
rate (and the reverse); where both are, neither can carry the load (``Overloaded``). The
crossings are sought on the rates where both are stable.

What it answers is sim/studies/serving/crossover_result.py; the crossings' 90% intervals
from inputs and model, sim/studies/serving/crossover_intervals.py. No plotting
(sim/report/decision_plots.py), no files, no text (sim/report/crossover.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.break_even import (
    Crossing,
    find_crossings,
    refinement_bound,
    stopped_short,
)
from sim.studies.serving.crossover_intervals import (
    draw_crossings,
    draws_range,
    model_band,
    model_error_at,
    sourced_crossing_interval90,
    within_range,
)
from sim.studies.serving.crossover_result import (
    NEITHER,
    PLAIN,
    SPECULATION,
    CrossoverResult,
    MetricCurve,
    Overloaded,
    latency_quantiles,
)
from sim.studies.serving.draw_intervals import (
    IntervalSources,
    answering,
    interval90,
    sources90,
)
from sim.studies.serving.draws import DrawnPoints, replication_counts
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import METRICS, Load, gain, level
from sim.studies.serving.scenario_plans import BASELINE, gain_band
from sim.studies.serving.sequential import GainsAgainst, describe
from sim.uncertainty.model_error import ModelErrorTerm, join_ends

__all__ = [
    "CROSSOVER_METRICS",
    "WITHIN_NOTE",
    "crossover",
    "default_loads",
    "load_grid",
]

#: The metrics whose crossover the command reports, in report order.
CROSSOVER_METRICS: tuple[str, ...] = (
    "per_user_tok_s",
    "aggregate_tok_s",
    "tpot_p50_ms",
    "tpot_p99_ms",
)


def default_loads(kind: str, top: float) -> list[float]:
    """A geometric grid up to ``top``: 1, 2, 4, ... users (``top`` included), or eight
    rates from ``top`` / 64 to ``top``."""
    if kind == "concurrency":
        out, c = [], 1
        while c < top:
            out.append(float(c))
            c *= 2
        return [*out, float(int(top))]
    return [top / 2.0**i for i in range(6, -1, -1)]


def load_grid(kind: str, values: Sequence[float]) -> list[Load]:
    """Sorted, distinct loads (SpecsimError for a bad value)."""
    try:
        loads = sorted({Load(kind, v) for v in values})
    except ValueError as exc:
        raise SpecsimError(str(exc), param="loads") from None
    if len(loads) < 2:
        raise SpecsimError("give at least two loads to find a crossover", param="loads")
    return loads


#: The assumption of a document where a crossing's bisection stopped inside its draws'
#: range or its model-error band (``crossover``'s ``within``, ``within_range``).
WITHIN_NOTE = (
    "crossings: a bisection stops once its bracket lies inside the draws' 5-95% of that "
    "crossing, or inside the loads where the gain's model-error band holds 1 (the 90% "
    "interval is the one bisecting on gives); such a crossing is "
    "interpolated in its wider bracket and its 95% interval runs to its brackets' outer "
    "ends (--draws 0 bisects every crossing to neighbouring loads)"
)


def crossover(
    evaluator: PointEvaluator,
    loads: Sequence[Load],
    num_steps: Sequence[int],
    *,
    metrics: Sequence[str] = CROSSOVER_METRICS,
    refine: bool = True,
    rtol: float = 0.02,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    draft_method: str | None = None,
    sequential: bool = True,
    within: bool = True,
) -> CrossoverResult:
    """Gain curves and crossovers of every metric at every k over ``loads``.

    The whole grid (baseline and every k at every load) runs first, in parallel through
    the evaluator's executor; ``refine`` then narrows each crossing (and its interval's
    ends) between grid loads (sim/studies/serving/break_even.py: first by the loads any
    metric's search at that k has already run, then by bisection), simulating the loads
    in between one at a time. ``draws``: each crossing's 90% interval from inputs and
    model (``crossing_interval90``). ``sequential``: a (load, k) pair stops at its first
    replications where every metric's gain is settled against 1, or (with ``draws``: the
    90% intervals then hold the gains' model-error band) precise against that band at the
    load (sim/studies/serving/sequential.py ``GainsAgainst``, ``precise``). ``within``
    (with ``draws``): a crossing's bisections stop once their bracket lies inside the
    draws' 5-95% of its crossing (``draws_range``), which the 90% interval holds whatever
    the bisection finds there: the 90% interval is the one bisecting to the resolution
    gives, the crossing is interpolated in the wider bracket and its 95% interval's ends
    are their brackets' outer ends (sim/studies/serving/break_even.py ``find_crossings``).

    In three stages: the grid's runs (``_grid_runs``); with ``refine``, the bisections'
    bound announced (``_expect_refinements``); then per k and metric its gain curve, its
    crossings and their 90% intervals (``_metric_curve``).
    """
    ks = _draft_lengths(num_steps, metrics)
    grid = list(loads)
    kind = grid[0].kind
    policies = [BASELINE, *(FixedK(k) for k in ks)]
    # with draws the 90% intervals hold the gains' model-error band: a comparison precise
    # against it stops too (sim/studies/serving/sequential.py)
    band = gain_band(evaluator.builder) if sequential and draws is not None else None
    if sequential:
        evaluator.rule = GainsAgainst(BASELINE, tuple(metrics), band)
    paired, distributions, overloads = _grid_runs(evaluator, grid, ks, policies)
    if refine:
        _expect_refinements(evaluator, grid, paired, metrics, rtol)
    curves = []
    term_at = model_error_at(evaluator, grid, draws)
    short = False  # some crossing's bisection stopped inside its draws' range
    for k in ks:
        overloaded = _overloaded(evaluator, grid, k)
        for metric in metrics:
            curve, stopped = _metric_curve(
                evaluator,
                grid[0],
                paired[k],
                k,
                metric,
                overloaded,
                term_at,
                draws=draws,
                rtol=rtol if refine else None,
                within=within,
            )
            curves.append(curve)
            short |= stopped
    top = max((float(p.mean_batch.mean()) for p in evaluator.memo.values()), default=1.0)
    return CrossoverResult(
        scenario=scenario,
        load_kind=kind,
        grid=tuple(float(load.value) for load in grid),
        num_steps=tuple(ks),
        curves=tuple(curves),
        distributions=distributions,
        runs=evaluator.runs,
        settings={**dict(settings or {}), **replication_counts(evaluator, draws)},
        assumptions=(*assumptions, *_notes(evaluator, band is not None, short, draws)),
        overloads=overloads,
        draft_method=draft_method,
        model_error=term_at(None, top).doc() if draws is not None else None,
        not_steady=tuple(
            sorted(
                (float(load.value), p.max_k, point.not_steady, point.replications)
                for (load, p), point in evaluator.memo.items()
                if point.not_steady and load.kind == kind
            )
        ),
    )


def _draft_lengths(num_steps: Sequence[int], metrics: Sequence[str]) -> list[int]:
    """The distinct draft lengths, sorted; SpecsimError naming the option for a length
    below 1 or a metric not in ``METRICS``."""
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise SpecsimError(f"unknown metric {unknown[0]!r}", param="metrics")
    return ks


def _grid_runs(
    evaluator: PointEvaluator, grid: Sequence[Load], ks: Sequence[int], policies: Sequence[FixedK]
) -> tuple[dict[int, list[Load]], dict[float, dict[str, Any]], tuple[Any, ...]]:
    """Stage 1 of ``crossover``: every policy at every grid load where it is needed, run
    together. A rate above a policy's bound is not simulated; a pair (k, plain decoding)
    runs where both are stable. Returns per k the loads where its pair runs, per grid load
    every run policy's latency quantiles (``latency_quantiles``), and the grid loads'
    stability checks that found a policy unstable."""
    paired = {k: [x for x in grid if _both_stable(evaluator, x, k)] for k in ks}
    needed = {(x, p) for k in ks for x in paired[k] for p in (BASELINE, FixedK(k))}
    evaluator.keep_samples |= set(grid)  # latency distributions at the grid loads
    evaluator.ensure([(load, p) for load in grid for p in policies if (load, p) in needed])
    distributions = {
        float(load.value): {
            str(p.max_k): latency_quantiles(evaluator(load, p))
            for p in policies
            if (load, p) in needed
        }
        for load in grid
        if any((load, p) in needed for p in policies)
    }
    checks = [evaluator.check(x, {str(p.max_k): p for p in policies}) for x in grid]
    overloads = tuple(c for c in checks if c is not None and not c.stable)
    return paired, distributions, overloads


def _gain_curve(
    evaluator: PointEvaluator, load: Load, k: int, metric: str
) -> Callable[[float], Ratio]:
    """The paired gain of speculation at ``k`` over plain decoding on ``metric`` at load
    value x (loads of ``load``'s kind; paired_metrics.py ``gain``), the pair simulated in
    one step where it has not run yet."""
    spec = FixedK(k)

    def curve(x: float) -> Ratio:
        at = load.at(x)
        evaluator.ensure([(at, spec), (at, BASELINE)], step=True)  # a pair: one step
        return gain(evaluator(at, spec), evaluator(at, BASELINE), metric)

    return curve


def _expect_refinements(
    evaluator: PointEvaluator,
    grid: Sequence[Load],
    paired: Mapping[int, Sequence[Load]],
    metrics: Sequence[str],
    rtol: float,
) -> None:
    """Stage 2 of ``crossover``: tell the evaluator the most simulations refining may
    take: twice (k and plain decoding at each midpoint) the bisections' bound of every
    metric's curve at every k (break_even.py ``refinement_bound``)."""
    evaluator.expect(
        2
        * sum(
            refinement_bound(
                [float(load.value) for load in loads],
                [_gain_curve(evaluator, grid[0], k, metric) for metric in metrics],
                integer=grid[0].integer,
                rtol=rtol,
            )
            for k, loads in paired.items()
        )
    )


def _both_ran(evaluator: PointEvaluator, spec: FixedK, kind: str) -> list[float]:
    """Loads of ``kind`` where ``spec`` and plain decoding have both run, sorted."""
    return sorted(
        float(load.value)
        for load, p in evaluator.memo
        if p == spec and load.kind == kind and (load, BASELINE) in evaluator.memo
    )


def _metric_curve(
    evaluator: PointEvaluator,
    load: Load,
    paired: Sequence[Load],
    k: int,
    metric: str,
    overloaded: tuple[Overloaded, ...],
    term_at: Callable[..., ModelErrorTerm],
    *,
    draws: DrawnPoints | None,
    rtol: float | None,
    within: bool,
) -> tuple[MetricCurve, bool]:
    """Stage 3 of ``crossover``: one metric at one k on the loads ``paired`` (of
    ``load``'s kind) where its pair runs: its crossings (break_even.py ``find_crossings``;
    ``rtol`` None: interpolated, no refinement) with their 90% intervals
    (``_intervals90``), found again while the draws run a nominal point's other
    replications; and whether a bisection stopped inside its draws' range (``within``)."""
    spec = FixedK(k)
    curve = _gain_curve(evaluator, load, k, metric)
    xs = [float(x.value) for x in paired]

    def simulated() -> list[float]:
        return _both_ran(evaluator, spec, load.kind)

    def inside(a: float, b: float, direction: str) -> tuple[float, float] | None:
        """The draws' 5-95% of a crossing in the cell (a, b), with the gain's
        model-error band where it holds 1 over the cell (``within_range``):
        inside it, refining cannot move the 90% interval (``find_crossings``'
        ``within``)."""
        assert draws is not None
        ends = draws_range(draw_crossings(draws, paired, k, metric, xs.index(a), direction))
        return within_range(ends, model_band(xs, curve, math.sqrt(a * b), term_at), a, b)

    while True:  # again when the draws ran a nominal point's other replications
        ran = evaluator.completed
        found = find_crossings(
            xs,
            curve,
            integer=load.integer,
            rtol=rtol,
            seen=simulated,
            within=inside if draws is not None and draws.draws and within else None,
        )
        intervals, sources, nearest = _intervals90(
            draws, load, paired, k, metric, found, curve, term_at
        )
        if evaluator.completed == ran:
            break
    pts = simulated()
    short = any(stopped_short(c, load.integer, rtol) for c in found)
    return MetricCurve(
        metric=metric,
        num_steps=k,
        loads=tuple(pts),
        gain=tuple(curve(x) for x in pts),
        speculative=tuple(level(evaluator(load.at(x), spec), metric) for x in pts),
        baseline=tuple(level(evaluator(load.at(x), BASELINE), metric) for x in pts),
        crossings=tuple(found),
        overloaded=overloaded,
        interval90=intervals,
        nearest=nearest,
        sources=sources,
    ), short


def _intervals90(
    draws: DrawnPoints | None,
    load: Load,
    paired: Sequence[Load],
    k: int,
    metric: str,
    found: Sequence[Crossing],
    curve: Callable[[float], Ratio],
    term_at: Callable[..., ModelErrorTerm],
) -> tuple[
    tuple[tuple[float | None, float | None], ...],
    tuple[IntervalSources, ...],
    tuple[float, list[float] | None] | None,
]:
    """The 90% intervals from inputs and model of a curve's crossings ``found`` on the
    loads ``paired`` (of ``load``'s kind): each from the draws' crossings
    (``sourced_crossing_interval90``) joined with the loads where the gain's model-error
    band holds 1 (``model_band``), with what each holds; without a crossing, the load
    whose gain is nearest 1 and that gain's 90% interval (``interval90`` of the draws'
    gains and the Monte Carlo interval, widened by the model-error term). All empty
    without draws: the Monte Carlo interval only."""
    xs = [float(x.value) for x in paired]
    if draws is None or not xs:
        return (), (), None
    sourced = [sourced_crossing_interval90(draws, paired, k, metric, c) for c in found]
    intervals = tuple(
        join_ends(ends, model_band(xs, curve, c.at, term_at), load.integer)
        for (ends, _), c in zip(sourced, found, strict=True)
    )
    sources = tuple(held for _, held in sourced)
    if found:
        return intervals, sources, None
    at = min(xs, key=lambda x: abs(curve(x).mean - 1.0))
    g = draws.gains(load.at(at), k, metric)
    ends = interval90(g.tolist(), curve(at).ci95, positive=True)
    nearest = (at, term_at(at).gain(curve(at).mean, ends))
    return intervals, (sources90(answering(g), curve(at).ci95, draws.uncertain),), nearest


def _notes(
    evaluator: PointEvaluator, band: bool, short: bool, draws: DrawnPoints | None
) -> tuple[str, ...]:
    """The study's own assumption lines: its sequential replications (``describe``; with
    ``band``: against the gains' model-error band), ``WITHIN_NOTE`` where a bisection
    stopped short, and what the draws took."""
    notes: tuple[str, ...] = (
        (describe(evaluator.first, evaluator.replications, band=band),)
        if evaluator.sequential
        else ()
    )
    if short:
        notes += (WITHIN_NOTE,)
    drawn_note = None if draws is None else draws.describe()
    if drawn_note:
        notes += (drawn_note,)
    return notes


def _both_stable(evaluator: PointEvaluator, load: Load, k: int) -> bool:
    return evaluator.stable(load, BASELINE) and evaluator.stable(load, FixedK(k))


def _overloaded(evaluator: PointEvaluator, grid: Sequence[Load], k: int) -> tuple[Overloaded, ...]:
    """The grid rates above speculation's (at k) or plain decoding's bound, each with the
    policy that is still stable there (or neither)."""
    out = []
    for load in grid:
        spec_ok, base_ok = evaluator.stable(load, FixedK(k)), evaluator.stable(load, BASELINE)
        if spec_ok and base_ok:
            continue
        spec_b, base_b = evaluator.bound(load, FixedK(k)), evaluator.bound(load, BASELINE)
        assert spec_b is not None and base_b is not None  # only a rate is ever unstable
        verdict = SPECULATION if spec_ok else PLAIN if base_ok else NEITHER
        out.append(Overloaded(float(load.value), verdict, spec_b.rate_per_s, base_b.rate_per_s))
    return tuple(out)
