"""Up to which load speculative decoding pays: the crossover of each metric, per k.

For each draft length k and each metric (per-user tok/s, aggregate tok/s, TPOT p50 and
p99; sim/studies/serving/paired_metrics.py ``METRICS``) the paired gain of speculation at k over
plain decoding is simulated on a grid of loads (closed-loop users or Poisson rates) and
its crossings through 1 are located with 95% intervals (sim/studies/serving/break_even.py). Every
(load, k) is the scenario at that load and ``speculation.num_steps = k`` simulated at the
scenario's seed (sim/studies/serving/evaluator.py), which is what ``sweep`` over
``serving.concurrency`` and ``speculation.num_steps`` simulates: the curves are the same.

Rates above a policy's service bound (sim/simulation/serving/stability.py: the most
requests a second it can answer) have no steady state and are not simulated: where
speculation at k is above its bound and plain decoding is not, plain decoding wins at that
rate (and the reverse); where both are, neither can carry the load (``Overloaded``). The
crossings are sought on the rates where both are stable.

No plotting (sim/report/decision_plots.py), no files, no text
(sim/report/crossover.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.model_error import GainParameterLaw
from sim.model.policy import FixedK
from sim.simulation.serving.metrics import Ratio
from sim.simulation.serving.overload import at_most
from sim.simulation.serving.stability import LoadCheck
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.break_even import (
    STOPS,
    Crossing,
    find_crossings,
    refinement_bound,
    stopped_short,
)
from sim.studies.serving.draw_intervals import interval90
from sim.studies.serving.draws import DrawnPoints, replication_counts
from sim.studies.serving.evaluator import BASELINE, PointEvaluator, ScenarioPlans, gain_band
from sim.studies.serving.paired_metrics import METRICS, Load, PolicyPoint, gain, level, ratio_doc
from sim.studies.serving.sequential import GainsAgainst, describe
from sim.uncertainty.model_error import (
    ModelErrorTerm,
    TermOrigin,
    crossing_band,
    join_ends,
)

__all__ = [
    "CROSSOVER_METRICS",
    "CrossoverResult",
    "MetricCurve",
    "Overloaded",
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


#: Quantile levels of the latency distributions kept per grid load (0, 1, ..., 100%).
LEVELS = np.linspace(0.0, 1.0, 101)


def latency_quantiles(point: PolicyPoint) -> dict[str, list[float]]:
    """Pooled TTFT and TPOT quantiles (ms) at ``LEVELS`` (empty lists without samples)."""
    return {
        name: (np.quantile(v, LEVELS).tolist() if v.size else [])
        for name, v in point.samples.items()
    }


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


#: Who wins a rate above a bound, without simulating: the one still stable, or neither.
SPECULATION, PLAIN, NEITHER = "speculation", "plain decoding", "neither"


@dataclass(frozen=True, slots=True)
class Overloaded:
    """A rate (``load``, requests/s) above speculation's or plain decoding's service bound
    (``speculative_bound`` and ``baseline_bound``, requests/s): ``verdict`` the policy
    still stable there (``SPECULATION`` or ``PLAIN``), or ``NEITHER``."""

    load: float
    verdict: str
    speculative_bound: float
    baseline_bound: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "stable": False,
            "winner": self.verdict,
            "speculative_service_bound_per_s": self.speculative_bound,
            "baseline_service_bound_per_s": self.baseline_bound,
        }


def overload_summary(overloaded: Sequence[Overloaded], num_steps: int) -> str:
    """What the rates above a bound decide, in words (``MetricCurve.summary``)."""
    out = []
    for verdict in (PLAIN, SPECULATION, NEITHER):
        rows = [o for o in overloaded if o.verdict == verdict]
        if not rows:
            continue
        rates = ", ".join(f"{o.load:g}" for o in rows)
        spec = f"k = {num_steps} ({at_most(rows[0].speculative_bound)})"
        base = f"plain decoding ({at_most(rows[0].baseline_bound)})"
        if verdict == PLAIN:
            out.append(f"plain decoding wins at {rates} requests/s: above what {spec} answers")
        elif verdict == SPECULATION:
            out.append(f"speculation wins at {rates} requests/s: above what {base} answers")
        else:
            out.append(f"neither is stable at {rates} requests/s: above {spec} and {base}")
    return "; ".join(out)


@dataclass(frozen=True, slots=True)
class MetricCurve:
    """One metric at one k over the load grid (and the loads refinement added):
    ``loads`` (n,), ``gain``, ``speculative`` and ``baseline`` levels per load."""

    metric: str
    num_steps: int
    loads: tuple[float, ...]
    gain: tuple[Ratio, ...]
    speculative: tuple[Ratio, ...]
    baseline: tuple[Ratio, ...]
    crossings: tuple[Crossing, ...]
    #: Grid rates above a bound, decided without simulating (``Overloaded``).
    overloaded: tuple[Overloaded, ...] = ()
    #: Per crossing, its 90% interval from inputs and model (sim/studies/serving/draws.py:
    #: the draws' crossings on the neighbouring grid loads joined with the Monte Carlo
    #: interval; an end None: beyond the loads the draws ran).
    interval90: tuple[tuple[float | None, float | None], ...] = ()
    #: Without a crossing: the load whose gain is nearest 1 and that gain's 90% interval
    #: from inputs and model (None: no draws).
    nearest: tuple[float, list[float] | None] | None = None

    def _simulated_summary(self) -> str:
        if self.crossings:
            return "; ".join(f"{c.direction} at {c.at:.3g}" for c in self.crossings)
        means = [g.mean for g in self.gain]
        if not means:
            return "no load simulated"
        if all(m >= 1.0 for m in means):
            return "pays at every load simulated"
        if all(m < 1.0 for m in means):
            return "never pays at the loads simulated"
        return "no crossing"

    def summary(self) -> str:
        """What the curve says in words (pays throughout, never, or where it crosses; and
        who wins the rates above a bound)."""
        text = self._simulated_summary()
        if self.overloaded:
            text += "; " + overload_summary(self.overloaded, self.num_steps)
        return text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "num_steps": self.num_steps,
            "summary": self.summary(),
            "crossings": [
                {
                    **c.to_dict(),
                    **({"interval90": list(self.interval90[i])} if self.interval90 else {}),
                }
                for i, c in enumerate(self.crossings)
            ],
            **(
                {"nearest_one": {"load": self.nearest[0], "gain_interval90": self.nearest[1]}}
                if self.nearest is not None
                else {}
            ),
            "points": [
                {
                    "load": x,
                    "gain": ratio_doc(g),
                    "speculative": ratio_doc(s),
                    "baseline": ratio_doc(b),
                }
                for x, g, s, b in zip(
                    self.loads, self.gain, self.speculative, self.baseline, strict=True
                )
            ],
        }
        if self.overloaded:  # only then: a stable grid's document is as it was
            out["overloaded"] = [o.to_dict() for o in self.overloaded]
            out["overload_summary"] = overload_summary(self.overloaded, self.num_steps)
        return out


@dataclass(frozen=True, slots=True)
class CrossoverResult:
    scenario: str
    load_kind: str
    grid: tuple[float, ...]
    num_steps: tuple[int, ...]
    curves: tuple[MetricCurve, ...]
    distributions: dict[float, dict[str, dict[str, list[float]]]]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    #: Grid rates above some policy's bound (``LoadCheck``, policies named by k)
    overloads: tuple[LoadCheck, ...] = ()
    #: Simulated (load, policy k, replications not steady, replications) where the
    #: requests in the system grew through the window (serve's NOT STEADY)
    not_steady: tuple[tuple[float, int, int, int], ...] = ()
    #: The scenario's draft method (acceptance.method), named in the engine configs.
    draft_method: str | None = None
    #: The model-error term the crossings' 90% intervals include (``ModelErrorTerm.doc``
    #: at the largest decode batch run; None: no draws, Monte Carlo intervals only).
    model_error: dict[str, Any] | None = None

    def curve(self, metric: str, k: int) -> MetricCurve:
        return next(c for c in self.curves if c.metric == metric and c.num_steps == k)

    def threshold_rows(self, k: int) -> tuple[tuple[int, int, int], ...] | None:
        """The per-user tok/s crossover at ``k`` as a ``[start_bs, end_bs, k]`` table: k
        up to the batch before speculation stops paying, plain decoding from there (a
        closed loop without think time keeps about one request a user in the batch).
        None: a load in requests/s, no per-user curve, or a curve that does not stop
        paying exactly once from the first load."""
        if self.load_kind != "concurrency" or not self.curves:
            return None
        curve = next(
            (c for c in self.curves if c.metric == "per_user_tok_s" and c.num_steps == k), None
        )
        if curve is None:
            return None
        top = int(max(self.grid))
        if not curve.crossings:
            pays = all(g.mean >= 1.0 for g in curve.gain)
            return ((1, top, k),) if pays else None
        if len(curve.crossings) != 1 or curve.crossings[0].direction != STOPS:
            return None
        first_plain = int(curve.crossings[0].at)
        if first_plain <= 1:
            return None
        rows = [(1, first_plain - 1, k)]
        if first_plain <= top:
            rows.append((first_plain, top, 0))
        return tuple(rows)

    def engine_configs(self) -> dict[str, Any]:
        """Each k's crossover as each engine accepts it (sim/studies/engine_configs.py)."""
        out: dict[str, Any] = {}
        for k in self.num_steps:
            rows = self.threshold_rows(k)
            if rows is not None:
                out[str(k)] = {"table": [list(r) for r in rows],
                               **engine_configs(rows, self.draft_method)}  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "load_kind": self.load_kind,
            "engine_configs": self.engine_configs(),
            "grid": list(self.grid),
            "num_steps": list(self.num_steps),
            "metrics": {m: _metric_doc(m) for m in dict.fromkeys(c.metric for c in self.curves)},
            **self.settings,
            "runs": self.runs,
            "assumptions": list(self.assumptions),
            "curves": [c.to_dict() for c in self.curves],
            **({"model_error": self.model_error} if self.model_error is not None else {}),
            "distribution_levels": [float(q) for q in LEVELS],
            "distributions": [
                {"load": x, "by_num_steps": by_k} for x, by_k in self.distributions.items()
            ],
            **({"overloads": [c.to_dict() for c in self.overloads]} if self.overloads else {}),
            **(
                {
                    "not_steady": [
                        {"load": x, "num_steps": k, "replications": n, "of": r}
                        for x, k, n, r in self.not_steady
                    ]
                }
                if self.not_steady
                else {}
            ),
        }


def _metric_doc(name: str) -> dict[str, Any]:
    spec = METRICS[name]
    return {"label": spec.label, "unit": spec.unit, "higher_is_better": spec.higher_is_better}


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
    """
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise SpecsimError(f"unknown metric {unknown[0]!r}", param="metrics")
    grid = list(loads)
    kind = grid[0].kind
    policies = [BASELINE, *(FixedK(k) for k in ks)]
    # with draws the 90% intervals hold the gains' model-error band: a comparison precise
    # against it stops too (sim/studies/serving/sequential.py)
    band = gain_band(evaluator.builder) if sequential and draws is not None else None
    if sequential:
        evaluator.rule = GainsAgainst(BASELINE, tuple(metrics), band)
    # a rate above a policy's bound is not simulated; a pair runs where both are stable
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

    def curve_of(k: int, metric: str) -> Callable[[float], Ratio]:
        spec = FixedK(k)

        def curve(x: float) -> Ratio:
            load = grid[0].at(x)
            evaluator.ensure([(load, spec), (load, BASELINE)], step=True)  # a pair: one step
            return gain(evaluator(load, spec), evaluator(load, BASELINE), metric)

        return curve

    if refine:  # each midpoint simulates k and plain decoding: the bisections' bound
        evaluator.expect(
            2
            * sum(
                refinement_bound(
                    [float(load.value) for load in paired[k]],
                    [curve_of(k, metric) for metric in metrics],
                    integer=grid[0].integer,
                    rtol=rtol,
                )
                for k in ks
            )
        )
    curves = []
    term_at = _term_at(evaluator, grid, draws)
    short = False  # some crossing's bisection stopped inside its draws' range
    for k in ks:
        spec = FixedK(k)
        overloaded = _overloaded(evaluator, grid, k)
        for metric in metrics:
            curve = curve_of(k, metric)

            def simulated(spec: FixedK = spec) -> list[float]:
                """Loads where ``spec`` and plain decoding have both run."""
                return sorted(
                    float(load.value)
                    for load, p in evaluator.memo
                    if p == spec and load.kind == kind and (load, BASELINE) in evaluator.memo
                )

            xs = [float(load.value) for load in paired[k]]

            def inside(
                a: float,
                b: float,
                direction: str,
                k: int = k,
                metric: str = metric,
                xs: list[float] = xs,
                curve: Callable[[float], Ratio] = curve,
            ) -> tuple[float, float] | None:
                """The draws' 5-95% of a crossing in the cell (a, b), with the gain's
                model-error band where it holds 1 over the cell (``within_range``):
                inside it, refining cannot move the 90% interval (``find_crossings``'
                ``within``)."""
                assert draws is not None
                i = [float(load.value) for load in paired[k]].index(a)
                ends = draws_range(draws, paired[k], k, metric, i, direction)
                return within_range(ends, _model_band(xs, curve, math.sqrt(a * b), term_at), a, b)

            while True:  # again when the draws ran a nominal point's other replications
                ran = evaluator.completed
                found = find_crossings(
                    xs,
                    curve,
                    integer=grid[0].integer,
                    rtol=rtol if refine else None,
                    seen=simulated,
                    within=inside if draws is not None and draws.draws and within else None,
                )
                intervals: tuple[tuple[float | None, float | None], ...] = ()
                nearest = None
                if draws is not None and xs:  # no draws: the Monte Carlo interval
                    intervals = tuple(
                        join_ends(
                            crossing_interval90(draws, paired[k], k, metric, c),
                            _model_band(xs, curve, c.at, term_at),
                            grid[0].integer,
                        )
                        for c in found
                    )
                    if not found:
                        at = min(xs, key=lambda x: abs(curve(x).mean - 1.0))
                        g = draws.gains(grid[0].at(at), k, metric)
                        ends = interval90(g.tolist(), curve(at).ci95, positive=True)
                        nearest = (at, term_at(at).gain(curve(at).mean, ends))
                if evaluator.completed == ran:
                    break
            pts = simulated()
            resolution = rtol if refine else None
            short |= any(stopped_short(c, grid[0].integer, resolution) for c in found)
            curves.append(
                MetricCurve(
                    metric=metric,
                    num_steps=k,
                    loads=tuple(pts),
                    gain=tuple(curve(x) for x in pts),
                    speculative=tuple(level(evaluator(grid[0].at(x), spec), metric) for x in pts),
                    baseline=tuple(level(evaluator(grid[0].at(x), BASELINE), metric) for x in pts),
                    crossings=tuple(found),
                    overloaded=overloaded,
                    interval90=intervals,
                    nearest=nearest,
                )
            )
    notes: tuple[str, ...] = (
        (describe(evaluator.first, evaluator.replications, band=band is not None),)
        if evaluator.sequential
        else ()
    )
    if short:
        notes += (WITHIN_NOTE,)
    drawn_note = None if draws is None else draws.describe()
    if drawn_note:
        notes += (drawn_note,)
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
        assumptions=(*assumptions, *notes),
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


def within_range(
    drawn: tuple[float, ...], band: tuple[float | None, float | None], a: float, b: float
) -> tuple[float, float] | None:
    """The loads a crossing's bisections in the grid cell (a, b) may stop inside without
    moving its 90% interval (``find_crossings``' ``within``): the draws' 5-95% of its
    crossing ``drawn`` (empty: no draw crosses), and where the gain's model-error band
    holds 1 over the whole cell (``band``, ``_model_band`` at any load of the cell: a
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


def _term_at(
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


def _model_band(
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
    xs = [float(x.value) for x in grid]
    below = [j for j, x in enumerate(xs) if x <= c.at]
    i = min(below[-1] if below else 0, len(xs) - 2)
    found = draws_range(draws, grid, k, metric, i, c.direction, versus)
    lo_mc, hi_mc = c.ci95
    ends = [-math.inf if lo_mc is None else lo_mc, math.inf if hi_mc is None else hi_mc]
    low, high = min([*ends, *found]), max([*ends, *found])
    if grid[0].integer:  # users: the fewest on the new side, as the crossing itself
        low, high = (math.ceil(x) if math.isfinite(x) else x for x in (low, high))
    return (None if not math.isfinite(low) else low, None if not math.isfinite(high) else high)


def draws_range(
    draws: DrawnPoints,
    grid: Sequence[Load],
    k: int,
    metric: str,
    i: int,
    direction: str,
    versus: int = 0,
) -> tuple[float, ...]:
    """The 5% and 95% quantiles of the draws' crossings of a crossing in ``direction``
    found in the grid cell (grid[i], grid[i + 1]) (empty: no draw crosses): each draw's
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
    if not found:
        return ()
    # quantiles that are draws' values: an open end stays infinite, never NaN
    values = list(found.values())
    return tuple(float(q) for q in np.quantile(values, [0.05, 0.95], method="inverted_cdf"))


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
