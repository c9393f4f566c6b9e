"""The 90% intervals from inputs and model of ``capacity``
(sim/studies/serving/capacity.py): each policy's capacity and its gain over plain
decoding from the draws' capacities (sim/studies/serving/capacity_ladder.py) joined with
the Monte Carlo 95% intervals and widened by the model-error term at the capacity's
decode batch (``capacity_intervals``, ``gain_draws``, ``model_error_terms``), and the
range such an interval holds whatever the 95% ends are (``settled_range``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.studies.serving.capacity_result import PolicyCapacity, capacity_gain
from sim.studies.serving.draw_intervals import IntervalSources, answering, interval90, sources90
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = [
    "capacity_intervals",
    "capacity_sources",
    "gain_draws",
    "model_error_terms",
    "settled_range",
    "widest_term",
]

#: A policy's 90% intervals by name (``capacity_interval90``, ``capacity_gain_interval90``).
Intervals = dict[str, list[float | None] | None]


def capacity_intervals(
    policies: Sequence[PolicyCapacity],
    caps: Sequence[np.ndarray],
    gains: Sequence[tuple[float, float] | None],
    terms: Sequence[ModelErrorTerm | None] = (),
) -> tuple[Intervals, ...]:
    """Per policy: ``capacity_interval90`` (the draws' capacities ``caps`` (D,) each,
    5-95%, joined with the capacity's 95% interval; an end None lies beyond the rates
    tried) and ``capacity_gain_interval90`` (each draw's capacity over plain decoding's
    in the same draw, joined with the gain's paired 95% interval). ``terms``: per policy
    the model-error term at its capacity's decode batch (sim/uncertainty/model_error.py):
    the capacity's interval takes the levels' term, the gain's the gains' term at the
    larger batch of the policy and plain decoding. What each holds:
    ``capacity_sources``."""
    out = []
    terms = list(terms) or [None] * len(policies)
    for p, cap, gain_ci, term in zip(policies, caps, gains, terms, strict=True):
        row: Intervals = {}
        if p.crossing:
            ends = _open_interval(cap, p.ci95)
            if term is not None and p.rate_per_s is not None:
                ends = _open_widened(p.rate_per_s, ends, term.level)
            row["capacity_interval90"] = ends
        g = capacity_gain(p, policies[0])
        if g is not None and p is not policies[0]:
            low, point, high = gain_draws(cap, caps[0], p.ladder_ends, policies[0].ladder_ends)
            got = interval90(point[np.isfinite(point)].tolist(), gain_ci, positive=True)
            pair = [t for t in (term, terms[0]) if t is not None]
            if got is not None and pair:
                widest = max(pair, key=lambda t: t.gain_sigma)
                got = widest.gain(g, got)
            row["capacity_gain_interval90"] = (
                None if got is None else _censored_ends(got, low, high)
            )
        out.append(row)
    return tuple(out)


def capacity_sources(
    policies: Sequence[PolicyCapacity],
    caps: Sequence[np.ndarray],
    gains: Sequence[tuple[float, float] | None],
    uncertain: bool = True,
) -> tuple[dict[str, IntervalSources], ...]:
    """Per policy, what each of its ``capacity_intervals`` holds where that is not the
    inputs' draws (sim/studies/serving/draw_intervals.py ``sources90``: fewer than two
    draws answered, a capacity beyond the rates run counting as one; ``uncertain`` False:
    the scenario has no uncertain input), keyed by the interval's name + ``_sources``."""
    out: list[dict[str, IntervalSources]] = []
    for p, cap, gain_ci in zip(policies, caps, gains, strict=True):
        held: dict[str, IntervalSources] = {}
        if p.crossing:
            answered = int(np.count_nonzero(~np.isnan(cap)))
            held["capacity_interval90_sources"] = sources90(answered, p.ci95, uncertain)
        if capacity_gain(p, policies[0]) is not None and p is not policies[0]:
            _, point, _ = gain_draws(cap, caps[0], p.ladder_ends, policies[0].ladder_ends)
            held["capacity_gain_interval90_sources"] = sources90(
                answering(point), gain_ci, uncertain
            )
        out.append({k: v for k, v in held.items() if v is not IntervalSources.INPUTS})
    return tuple(out)


def gain_draws(
    cap: np.ndarray,
    base: np.ndarray,
    ends: tuple[float, float],
    base_ends: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each draw's capacity gain ``cap`` / ``base`` (D,) as (the lowest it can be, a
    value, the highest it can be). A capacity beyond the ladder's rates run (inf: passes
    at the highest, ``ends[1]``; -inf: fails at the lowest, ``ends[0]``) bounds the gain
    on one side: a policy's capacity above its highest rate gives a gain at least
    that rate over plain decoding's capacity (no upper bound), below its lowest at most
    that rate over it (no lower bound), and plain decoding's the other way round; the
    value is then that bound. Both beyond: NaN (no bound of the ratio), left out."""
    lo_p, hi_p = ends
    lo_0, hi_0 = base_ends
    num_lo = np.where(cap == np.inf, hi_p, np.where(cap == -np.inf, 0.0, cap))
    num_hi = np.where(cap == np.inf, np.inf, np.where(cap == -np.inf, lo_p, cap))
    den_lo = np.where(base == np.inf, hi_0, np.where(base == -np.inf, 0.0, base))
    den_hi = np.where(base == np.inf, np.inf, np.where(base == -np.inf, lo_0, base))
    with np.errstate(invalid="ignore", divide="ignore"):
        low = num_lo / den_hi
        high = num_hi / den_lo
    both = ~np.isfinite(cap) & ~np.isfinite(base)
    low[both | np.isnan(cap) | np.isnan(base)] = np.nan
    high[np.isnan(low)] = np.nan
    return low, np.where(np.isinf(high), low, high), high


def _censored_ends(got: Sequence[float], low: np.ndarray, high: np.ndarray) -> list[float | None]:
    """``got`` (a 90% interval from the draws' values and the Monte Carlo 95%) joined with
    the 5% quantile of the draws' lowest gains ``low`` and the 95% of their highest
    ``high`` (D,; NaN left out): a draw known only from one side lies there at its bound
    for the other side's end, which is then conservative, and where the quantile lands
    on a draw unbounded on its side (a lowest gain of 0, a highest of inf) that end is
    open (None)."""
    lo_v, hi_v = low[~np.isnan(low)], high[~np.isnan(high)]
    lo, hi = float(got[0]), float(got[1])
    if lo_v.size:
        q = float(np.quantile(lo_v, 0.05, method="inverted_cdf"))
        lo = min(lo, q) if q > 0 else math.nan
    if hi_v.size:
        q = float(np.quantile(hi_v, 0.95, method="inverted_cdf"))
        hi = max(hi, q) if math.isfinite(q) else math.nan
    return [None if math.isnan(lo) else lo, None if math.isnan(hi) else hi]


def _open_widened(nominal: float, ends: list[float | None], widen: Any) -> list[float | None]:
    """An interval whose ends may be open (None) widened by a term's ``level`` or
    ``gain`` (an open end stays open)."""
    lo, hi = ends
    got = widen(nominal, [nominal if lo is None else lo, nominal if hi is None else hi])
    return [None if lo is None else got[0], None if hi is None else got[1]]


def widest_term(terms: Sequence[ModelErrorTerm | None]) -> dict[str, Any] | None:
    """The document of the widest term (None: none)."""
    got = [t for t in terms if t is not None]
    return max(got, key=lambda t: t.level_sigma).doc() if got else None


def model_error_terms(
    draws: DrawnPoints, policies: Sequence[PolicyCapacity]
) -> list[ModelErrorTerm | None]:
    """Per policy, the model-error term at the decode batch of its simulated rate
    nearest its capacity (None: no capacity, or plans built without a scenario)."""
    plans = draws.evaluator.builder
    if not isinstance(plans, ScenarioPlans):
        return [None] * len(policies)
    out: list[ModelErrorTerm | None] = []
    for p in policies:
        close = [
            (abs(lr - math.log(p.rate_per_s)), float(pt.mean_batch.mean()))
            for lr, pt in zip(p.log_rates.tolist(), p.points, strict=False)
            if pt is not None and p.rate_per_s is not None
        ]
        out.append(plans.model_error.at(min(close)[1]) if close else None)
    return out


def _open_interval(
    values: np.ndarray, ci95: tuple[float | None, float | None]
) -> list[float | None]:
    """5-95% of ``values`` (inf: beyond the rates tried) joined with ``ci95``; an end
    beyond is None."""
    v = values[~np.isnan(values)]
    ends: list[float] = []
    if v.size:
        ends += [float(q) for q in np.quantile(v, [0.05, 0.95], method="inverted_cdf")]
    lo_mc, hi_mc = ci95
    ends += [-math.inf if lo_mc is None else lo_mc, math.inf if hi_mc is None else hi_mc]
    lo, hi = min(ends), max(ends)
    return [lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None]


def settled_range(
    value: float, caps: np.ndarray, term: ModelErrorTerm | None
) -> tuple[float, float] | None:
    """The range (requests/s) the capacity's 90% interval holds whatever its 95% ends
    are: the draws' capacities' 5-95% (``caps`` (D,), inf beyond the rates run) joined
    with the model-error band around ``value`` (``capacity_intervals``); None without a
    finite draw."""
    v = caps[~np.isnan(caps)]
    if not v.size:
        return None
    lo, hi = (float(q) for q in np.quantile(v, [0.05, 0.95], method="inverted_cdf"))
    if term is not None:
        band = term.level(value, [value, value])
        assert band is not None
        lo, hi = min(lo, band[0]), max(hi, band[1])
    return max(lo, 0.0), hi
