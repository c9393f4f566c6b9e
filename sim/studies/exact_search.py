"""Roots on the exact finite-N law, with one Monte Carlo run to check them and give the interval.

Where the per-request law is exact (one shared rate profile, fixed cycle times;
sim/simulation/exact.py), the criterion's statistic is a known, smooth, increasing function
g(x) of an acceptance lever x: the mean tok/s 1000 N E[1/n] / T, or P(tok/s >= t) =
P(n <= m_t) (sim/model/renewal.py). The root g(x*) = threshold is found on g itself
(safeguarded secant from the closed-form hint, sim/model/roots.py), free of Monte Carlo
noise. One Monte Carlo run at x* then checks it and gives the interval:

With common random numbers the estimate near x* is g(x) plus a slowly varying noise e, and
the 95% band is the estimate plus fixed offsets (hi - est above, est - lo below). The band
inversion of sim/studies/bisection.py (the lever values at which the target lies inside the
band) then has its ends where g(x) = threshold - (hi - g(x*)) (optimistic) and
g(x) = threshold + (g(x*) - lo) (pessimistic): two more roots of g, no more runs. The
exact root lies inside that interval exactly when the threshold lies inside the Monte
Carlo's band at x*: the check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sim.model.renewal import RequestLaw, cycles_and_emitted_law, cycles_law, p_cycles_at_most
from sim.model.roots import increasing_root
from sim.model.tree.acceptance import Acceptance
from sim.simulation.exact import length_pmf
from sim.simulation.summary import Stats
from sim.studies.bisection import Criterion, Root

#: Tolerance of the exact root on the lever (far below the search's ALPHA_XTOL).
EXACT_XTOL = 1e-9
#: Tolerance of the interval's ends where the secant shortcut fails (they rest on a local
#: model of the noise anyway; the shortcut's error is of order the curvature times the
#: interval's width squared, below 1e-7 for the seed).
END_XTOL = 1e-7


def cycles_reaching(tokens: int, cycle_ms: float, target_tok_s: float) -> int:
    """The most cycles m with 1000 N / (m T) >= target, in the Monte Carlo's float arithmetic."""
    m = max(0, math.floor(1000.0 * tokens / (cycle_ms * target_tok_s)))
    while 1000.0 * tokens / ((m + 1) * cycle_ms) >= target_tok_s:
        m += 1
    while m > 0 and 1000.0 * tokens / (m * cycle_ms) < target_tok_s:
        m -= 1
    return m


@dataclass
class ExactLever:
    """The exact statistics of a criterion along a lever ``x`` in [0, ``x_max``].

    ``model_at(x)`` is the acceptance model at x (one shared profile); every request emits
    ``output_tokens`` tokens in cycles of a fixed ``cycle_ms``. Laws are memoized by x.
    """

    model_at: Callable[[float], Acceptance]
    cycle_ms: float
    output_tokens: int
    x_max: float
    extend_growth: tuple[float, float] = (0.0, 0.0)
    _means: dict[float, float] = field(default_factory=dict)
    _laws: dict[float, RequestLaw] = field(default_factory=dict)

    @property
    def grows(self) -> bool:
        return self.extend_growth[0] != 0.0

    def law(self, x: float) -> RequestLaw:
        """The request's tok/s law at x with an extend that grows with L (joint (n, E))."""
        if x not in self._laws:
            joint = cycles_and_emitted_law(self.length_pmf(x), self.output_tokens)
            self._laws[x] = RequestLaw.with_extend(joint, self.cycle_ms, *self.extend_growth)
        return self._laws[x]

    def length_pmf(self, x: float) -> np.ndarray:
        return length_pmf(self.model_at(x))

    def mean_tok_s(self, x: float) -> float:
        """E[tok/s] = 1000 N E[1 / n] / T at x (with a growing extend: over (n, E))."""
        if self.grows:
            return self.law(x).mean_tok_s()
        if x not in self._means:
            law = cycles_law(self.length_pmf(x), self.output_tokens)
            self._means[x] = 1000.0 * self.output_tokens * law.mean_inverse() / self.cycle_ms
        return self._means[x]

    def stat(self, criterion: Criterion, x: float) -> float:
        """The criterion's statistic at x: mean tok/s, or P(tok/s >= target)."""
        if criterion.quantile is None:
            return self.mean_tok_s(x)
        if self.grows:
            return self.law(x).p_at_least(criterion.target_tok_s)
        m = cycles_reaching(self.output_tokens, self.cycle_ms, criterion.target_tok_s)
        return p_cycles_at_most(self.length_pmf(x), self.output_tokens, m)

    def root(
        self,
        criterion: Criterion,
        level: float,
        *,
        hint: float,
        slope: float | None,
        xtol: float = EXACT_XTOL,
    ) -> tuple[float | None, float | None]:
        """(least x with stat >= level, last secant slope); x None when out of reach."""
        return increasing_root(
            lambda x: self.stat(criterion, x),
            level,
            0.0,
            self.x_max,
            hint=hint,
            slope=slope,
            xtol=xtol,
        )


def exact_root(
    exact: ExactLever,
    criterion: Criterion,
    monte_carlo: Callable[[float], Stats],
    *,
    hint: float,
    slope: float | None = None,
) -> tuple[Root, Stats | None]:
    """The exact root, its Monte Carlo check and interval: (Root, statistics at the root).

    One Monte Carlo run (``monte_carlo(x)``) when the target is reachable, none otherwise.
    """
    thr = criterion.threshold
    x_star, s = exact.root(criterion, thr, hint=hint, slope=slope)
    if x_star is None:
        return Root(None, (None, None)), None
    stats = monte_carlo(x_star)
    _, lo, hi = criterion.stat(stats)
    g_star = exact.stat(criterion, x_star)

    def end(level: float) -> float | None:
        if s:  # a Newton step from the root, then one secant correction through both points
            x1 = min(max(x_star + (level - g_star) / s, 0.0), exact.x_max)
            g1 = exact.stat(criterion, x1)
            if g1 != g_star:
                x2 = x1 - (g1 - level) * (x1 - x_star) / (g1 - g_star)
                if 0.0 < x2 < exact.x_max:
                    return x2
        return exact.root(criterion, level, hint=x_star, slope=s, xtol=END_XTOL)[0]

    optimistic = end(thr - (hi - g_star))
    pessimistic = end(thr + (g_star - lo))
    return Root(x_star, (x_star if optimistic is None else optimistic, pessimistic)), stats
