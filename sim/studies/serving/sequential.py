"""Sequential replications: a study's point runs its first replications, and the rest only
where the comparison it enters is not settled.

The decision studies (crossover, best-k, capacity) compare policies at loads on common
random numbers (sim/studies/serving/paired_metrics.py). Far from a crossing, a tie or the
required share, a few replications already say on which side a comparison lies; the
replications beyond them only narrow an interval no answer reads. So a point runs
``FIRST`` replications (replications 0 to ``FIRST`` - 1 of the seed) and then the
remaining R - ``FIRST`` (replications ``FIRST`` to R - 1, sim/simulation/serving/simulate.py
``first``) unless its comparisons are settled:

    settled  <=>  |mean(v) - reference| > ``settled_se(n)`` x sd(v) / sqrt(n)

over the per-replication values v (n,) of every comparison the point enters at its load
(a paired gain against 1, a paired difference against 0, an SLO attainment against the
required share), each paired on the replications both points have. A comparison with a
value that is not finite is never settled. t(0.975, 3) = 3.18 < 4, so a comparison settled
at 4 replications has a 95% interval on one side of the reference by a margin. A study may
ask its rule earlier too (``EARLY``, best-k's check: ``PointEvaluator(early=...)``): on
fewer than ``FIRST`` values the bound is the t quantile with the same two-sided tail as
``SETTLED_SE`` has on ``FIRST`` (2 P(T_3 > 4) = 2.8%: 22.7 standard errors on 2 values,
5.8 on 3), so a comparison settled there has its 95% interval on one side too (t(0.975,
1) = 12.7); with two looks a comparison whose mean is the reference is settled by chance
at most 2 x 2.8% of the time (normal values). A point
whose comparisons are not all settled runs all R, so the points near a crossing, a tie
or the required share (the ones a band's end or an interpolation reads) have the full
R's intervals, as before. Where a draw of an interval's inputs lands near the
reference the study runs a stopped point's other replications too (draw_intervals.py ``near``).

A comparison that enters an answer with a model-error band (crossover's gains, best-k's
selection: their 90% intervals from inputs and model join the gains' term at the load's
decode batch, sim/uncertainty/model_error.py) is also resolved, from ``FIRST`` values on,
where its Monte Carlo standard error is at most ``PRECISION_SHARE`` of the band's
standard deviation (``precise``): the band alone is the least the answer's 90% interval
holds (the interval joins it, each end the farther), and Monte Carlo noise a quarter of
it widens it at most sqrt(1 + 1/16) = 1.03 times in quadrature. Such a point stops near
its reference too, where it can never be settled; its Monte Carlo 95% interval is then
at most half the band's 90% one. At a measured batch (no band) the rule is the one
above.

Deterministic: decisions are taken on whole batches of points, in the study's own order,
on the values of the replications run (never on the order results arrive), so a seed
gives the same points, replications and answer for any worker count or executor.

Rules (``Rule``): ``GainsAgainst`` (crossover: each k against plain decoding, every
metric), ``Leader`` (best-k's selection: each k against the k with the best mean),
``Pairs`` (best-k's check: each engine form against every fixed k) and ``Share``
(capacity: a point's attainment against the share).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sim.model.policy import SpeculationPolicy
from sim.studies.serving.paired_metrics import (
    METRICS,
    PolicyPoint,
    paired_difference,
    paired_gains,
    paired_values,
)

__all__ = [
    "EARLY",
    "FIRST",
    "PRECISION_SHARE",
    "SETTLED_SE",
    "Band",
    "GainsAgainst",
    "Leader",
    "Pairs",
    "Rule",
    "Share",
    "describe",
    "exact_tie",
    "merge",
    "precise",
    "settled",
    "settled_se",
]

#: Replications every point runs before its rule is asked.
FIRST = 4
#: Standard errors between a settled comparison's mean and its reference (on ``FIRST``
#: or more values; fewer: ``settled_se``).
SETTLED_SE = 4.0
#: Replications at which a study that looks early (best-k's check) first asks its rule.
EARLY = 2
#: A comparison whose Monte Carlo standard error is at most this share of the standard
#: deviation of its answer's model-error band is resolved without being settled
#: (``precise``): the two add in quadrature to at most sqrt(1 + 0.25^2) = 1.03 times the
#: band's alone, so more replications cannot move the answer's 90% interval from inputs
#: and model by anything a user can act on.
PRECISION_SHARE = 0.25

Points = Mapping[SpeculationPolicy, PolicyPoint]
#: The standard deviation of the model-error band on ln(gain) of the comparisons at a
#: load, from every point run there (sim/studies/serving/scenario_plans.py ``gain_band``: the
#: scenario's gains' term at the load's decode batch).
Band = Callable[[Points], float]


def settled_se(n: int) -> float:
    """The standard errors a mean of ``n`` >= 2 values must lie from its reference to be
    settled: ``SETTLED_SE`` on ``FIRST`` or more values; on fewer, the quantile of Student's
    t with n - 1 degrees of freedom whose two-sided tail is the one ``SETTLED_SE`` has with
    ``FIRST`` - 1, 2 P(T_3 > 4) = 0.028 (n = 2: 22.7, n = 3: 5.8)."""
    if n >= FIRST:
        return SETTLED_SE
    from scipy.special import stdtr, stdtrit  # lazy: scipy.special at import is slow

    tail = 2.0 * float(stdtr(FIRST - 1, -SETTLED_SE))
    return max(SETTLED_SE, float(stdtrit(n - 1, 1.0 - tail / 2.0)))


def settled(values: np.ndarray, reference: float) -> bool:
    """Whether the mean of ``values`` (n,) lies more than ``settled_se(n)`` standard errors
    from ``reference`` (``SETTLED_SE`` from ``FIRST`` values on; False for fewer than two
    values or a value that is not finite; values that do not vary are settled unless they
    equal the reference)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return False
    se = float(v.std(ddof=1)) / np.sqrt(v.size)
    return abs(float(v.mean()) - reference) > settled_se(v.size) * se


def precise(values: np.ndarray, sigma: float) -> bool:
    """Whether the Monte Carlo standard error of the mean of ``values`` (n,) is at most
    ``PRECISION_SHARE`` x ``sigma``, the standard deviation (in the values' units) of the
    model-error band of the answer the comparison enters: sd(v) / sqrt(n) <=
    ``PRECISION_SHARE`` sigma. Asked from ``FIRST`` values on (the standard error is then
    estimated on 3 or more degrees of freedom); False for fewer values, a value that is
    not finite or no band (``sigma`` <= 0: at a measured batch every replication still
    counts). Such a comparison may lie within the band of its reference, where it can
    never be settled, and more replications cannot move its answer's 90% interval: the
    Monte Carlo 95% interval on 4 values, t(0.975, 3) = 3.18 standard errors, is then at
    most 0.80 sigma wide on each side against the band's 1.645 sigma."""
    v = np.asarray(values, dtype=float)
    if v.size < FIRST or not sigma > 0 or not np.all(np.isfinite(v)):
        return False
    return float(v.std(ddof=1)) / np.sqrt(v.size) <= PRECISION_SHARE * sigma


def gain_settled(a: PolicyPoint, b: PolicyPoint, metric: str, sigma: float = 0.0) -> bool:
    """The paired gain of ``a`` over ``b`` (paired_metrics.py ``paired_gains``) settled
    against 1, or ``precise`` against the band ``sigma`` on ln(gain) (its standard error
    taken relative to the mean gain: se(ln g) = se(g) / g)."""
    gains = paired_gains(a, b, metric)
    if gains is None:
        return False
    return settled(gains, 1.0) or precise(gains, sigma * abs(float(np.mean(gains))))


def difference_settled(a: PolicyPoint, b: PolicyPoint, metric: str, sigma: float = 0.0) -> bool:
    """The paired difference ``a`` - ``b`` (paired_metrics.py ``difference``) settled
    against 0, or ``precise`` against the band ``sigma`` on ln(a / b) (the ratio a / b =
    1 + d / b, so the band is sigma x b's mean in the difference's units)."""
    x, y = paired_values(a, b, metric)
    d = paired_difference(x, y, METRICS[metric].higher_is_better)
    return settled(d, 0.0) or precise(d, sigma * abs(float(np.mean(y))))


def exact_tie(values: np.ndarray) -> bool:
    """Whether paired differences ``values`` (n,) are exact zeros on ``EARLY`` or more
    replications (paired_metrics.py ``paired_difference`` takes a difference within
    rounding of the values as 0): two policies that agree on every replication run
    under common random numbers (the same arrivals, lengths and acceptance draws) made
    the same decision at every step there (best-k's check: an engine form that drafts
    the fixed k's k at every batch its load reached, on another plan that the load does
    not feel). Their difference is a tie, not an estimate near 0 (``settled`` never
    settles exact zeros: no standard error). Assumed: a replication not run would agree
    as well (a rarer batch where the two differ is not excluded by the ones run)."""
    v = np.asarray(values, dtype=float)
    return v.size >= EARLY and bool(np.all(v == 0.0))


def difference_tied(a: PolicyPoint, b: PolicyPoint, metric: str) -> bool:
    """The paired difference ``a`` - ``b`` of ``metric`` is an ``exact_tie``."""
    x, y = paired_values(a, b, metric)
    return exact_tie(paired_difference(x, y, METRICS[metric].higher_is_better))


class Rule(Protocol):
    """Whether ``policy``'s point is settled, given every point run at its load."""

    def __call__(self, points: Points, policy: SpeculationPolicy) -> bool: ...


def _pairs_settled(
    points: Points,
    policy: SpeculationPolicy,
    pairs: Iterable[tuple[SpeculationPolicy, SpeculationPolicy]],
    test: Callable[[PolicyPoint, PolicyPoint], bool],
) -> bool:
    """Every pair naming ``policy`` whose other point has run is settled (``test(a, b)``);
    a point that pairs with nothing run yet is not. A pair of one point under two names
    (an engine form that is a fixed k at the load: evaluator.py ``same_point``) compares
    nothing: their difference is 0 by construction, not a Monte Carlo estimate."""
    mine = [(a, b) for a, b in pairs if policy in (a, b) and a in points and b in points]
    compared = [(a, b) for a, b in mine if points[a] is not points[b]]
    return bool(mine) and all(test(points[a], points[b]) for a, b in compared)


@dataclass(frozen=True, slots=True)
class GainsAgainst:
    """Each policy against ``reference`` (crossover: every k against plain decoding), the
    paired gain of every metric of ``metrics`` against 1; ``reference`` is settled when
    every policy run beside it is."""

    reference: SpeculationPolicy
    metrics: tuple[str, ...]
    #: The gains' model-error band at the load (None: none, every comparison must settle).
    band: Band | None = None

    def __call__(self, points: Points, policy: SpeculationPolicy) -> bool:
        pairs = [(p, self.reference) for p in points if p != self.reference]
        sigma = 0.0 if self.band is None else self.band(points)
        return _pairs_settled(
            points,
            policy,
            pairs,
            lambda a, b: all(gain_settled(a, b, m, sigma) for m in self.metrics),
        )


@dataclass(frozen=True, slots=True)
class Leader:
    """Each policy against the one with the best mean ``metric`` at the load (best-k's
    selection; ties to the first in ``order``), the paired difference against 0; the
    leader is settled when every other policy is."""

    metric: str
    order: Callable[[SpeculationPolicy], Any] = lambda p: 0
    #: The band of the ratio of two k at the load (the gains' term; None: none).
    band: Band | None = None

    def __call__(self, points: Points, policy: SpeculationPolicy) -> bool:
        sign = 1.0 if METRICS[self.metric].higher_is_better else -1.0

        def rank(p: SpeculationPolicy) -> tuple[float, Any]:
            return sign * float(points[p].values[self.metric].mean()), self.order(p)

        best = max(points, key=rank)
        pairs = [(p, best) for p in points if p != best]
        sigma = 0.0 if self.band is None else self.band(points)
        return _pairs_settled(
            points, policy, pairs, lambda a, b: difference_settled(a, b, self.metric, sigma)
        )


@dataclass(frozen=True, slots=True)
class Pairs:
    """Fixed pairs of policies (best-k's check: each engine form against every fixed k),
    the paired difference of ``metric`` against 0; a pair whose differences are exact
    zeros (``exact_tie``: the two agree on every replication run) is a tie and holds
    neither back."""

    metric: str
    pairs: tuple[tuple[SpeculationPolicy, SpeculationPolicy], ...]

    def __call__(self, points: Points, policy: SpeculationPolicy) -> bool:
        def test(a: PolicyPoint, b: PolicyPoint) -> bool:
            return difference_settled(a, b, self.metric) or difference_tied(a, b, self.metric)

        return _pairs_settled(points, policy, self.pairs, test)


@dataclass(frozen=True, slots=True)
class Share:
    """A point alone: its ``metric`` (capacity: SLO attainment) against ``share``."""

    metric: str
    share: float

    def __call__(self, points: Points, policy: SpeculationPolicy) -> bool:
        return settled(points[policy].values[self.metric], self.share)


def merge(a: PolicyPoint, b: PolicyPoint) -> PolicyPoint:
    """One point of ``a``'s replications followed by ``b``'s (the same policy and load, ``b``
    continuing the seed where ``a`` stopped): the point the two runs make together."""
    values = {m: np.concatenate([v, b.values[m]]) for m, v in a.values.items()}
    samples = {m: np.concatenate([v, b.samples[m]]) for m, v in a.samples.items()}
    return PolicyPoint(
        values,
        np.concatenate([a.mean_batch, b.mean_batch]),
        samples,
        a.not_steady + b.not_steady,
    )


#: What a document adds where a rule takes the model-error band (``precise``).
PRECISE_NOTE = (
    "; from {first} on, a comparison whose Monte Carlo standard error is at most "
    f"{PRECISION_SHARE:g} of the standard deviation of its model-error band at the load "
    "stops too, wherever its mean lies (its Monte Carlo 95% interval is then at most half "
    "the band's 90% one, and the two together at most 1.03 times the band)"
)


def describe(first: int, replications: int, early: tuple[int, ...] = (), band: bool = False) -> str:
    """The assumption a document states for sequential replications (``early``: the
    looks before ``first``, ``PointEvaluator(early=...)``; ``band``: the rule also stops
    a ``precise`` comparison)."""
    extra = PRECISE_NOTE.format(first=first) if band else ""
    if early:
        looks = ", ".join(f"{n} ({settled_se(n):.1f} standard errors)" for n in early)
        return (
            f"replications: sequential, {early[0]} at every point first; the rule asked at "
            f"{looks}, then at {first} ({SETTLED_SE:g}), the other {replications - first} "
            f"only where a comparison the point enters still lies within that many "
            f"standard errors of its reference (the same two-sided tail, "
            f"2 P(T_{FIRST - 1} > {SETTLED_SE:g}), at every look); a point stopped early is "
            f"on one side of it by its 95% interval (--all-replications runs "
            f"{replications} everywhere){extra}"
        )
    return (
        f"replications: sequential, {first} at every point first, the other "
        f"{replications - first} only at points where a comparison they enter (a paired "
        f"gain, difference or SLO attainment against 1, 0 or the share) lies within "
        f"{SETTLED_SE:g} standard errors of it; a point stopped early is on one side of it "
        f"by its 95% interval (--all-replications runs {replications} everywhere){extra}"
    )
