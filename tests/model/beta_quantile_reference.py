"""The quantile table as it was built before its checks ran forwards (inverting at every
check point): the oracle the forward checks are tested against, bit for bit."""

from __future__ import annotations

import numpy as np
from scipy import special

from sim.model.beta_quantile import (
    _QUARTERS,
    _START,
    MAX_NODES,
    TOLERANCE,
    U_MIN,
    _derivatives,
    _hermite,
)


class _Exact:
    """``betaincinv(a, b, .)`` remembered at every point already inverted: a split piece's
    halves are checked at points that often coincide, bit for bit, with its quarter points
    (inverted when the piece was checked), so those are looked up, not inverted again."""

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b
        self.points = np.empty(0)
        self.values = np.empty(0)

    def __call__(self, at: np.ndarray) -> np.ndarray:
        i = np.minimum(np.searchsorted(self.points, at), max(self.points.size - 1, 0))
        known = (self.points[i] == at) if self.points.size else np.zeros(at.shape, bool)
        out = np.empty_like(at)
        out[known] = self.values[i[known]]
        new = ~known
        if new.any():
            out[new] = special.betaincinv(self.a, self.b, at[new])
            order = np.argsort(np.concatenate([self.points, at[new]]), kind="stable")
            self.points = np.concatenate([self.points, at[new]])[order]
            self.values = np.concatenate([self.values, out[new]])[order]
        return out


def _at_fraction(
    exact_at: _Exact, u: np.ndarray, x: np.ndarray, d: np.ndarray, j: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At fraction ``t`` of each piece ``j`` (shape (J,)): the point, the exact quantile
    there and the table's absolute error."""
    at = u[j] + t * (u[j + 1] - u[j])
    exact = exact_at(at)
    got = _hermite(at, u[j], u[j + 1], x[j], x[j + 1], d[:, j], d[:, j + 1])
    return at, exact, np.abs(got - exact)


def reference_quantile_table(
    a: float, b: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(nodes u, quantiles x, derivatives (2, n)) of a checked table, or None if it would need
    more than ``MAX_NODES`` nodes (or the slopes cannot be resolved)."""
    # Chebyshev-spaced start: denser towards the ends, where the quantile bends most
    u = U_MIN + (1.0 - 2.0 * U_MIN) * 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, _START)))
    x = special.betaincinv(a, b, u)
    d = _derivatives(a, b, float(special.betaln(a, b)), x)
    exact_at = _Exact(a, b)
    unchecked = np.ones(u.size - 1, dtype=bool)  # pieces whose midpoint is not yet checked
    while unchecked.any():
        if u.size > MAX_NODES or not (np.all(np.isfinite(d)) and np.all(np.diff(x) > 0)):
            return None
        j = np.flatnonzero(unchecked)
        # the midpoint and the quarter points, each within half the tolerance: a midpoint
        # alone let a piece of Beta(0.037, 0.26) err by 3.6e-10 between its checks
        mid, exact, err = _at_fraction(exact_at, u, x, d, j, 0.5)
        bad = err > 0.5 * TOLERANCE
        for t in _QUARTERS:
            bad |= _at_fraction(exact_at, u, x, d, j, t)[2] > 0.5 * TOLERANCE
        unchecked[j] = False
        if not bad.any():
            break
        split = j[bad]  # each bad piece becomes two unchecked ones at its midpoint
        u = np.insert(u, split + 1, mid[bad])
        x = np.insert(x, split + 1, exact[bad])
        d = np.insert(
            d, split + 1, _derivatives(a, b, float(special.betaln(a, b)), exact[bad]), axis=1
        )
        unchecked = np.insert(unchecked, split + 1, True)
        unchecked[split + np.arange(split.size)] = True
    return u, x, d
