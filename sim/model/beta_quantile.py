"""The Beta quantile for many uniforms at once, cheaper than ``scipy.special.betaincinv``.

``betaincinv`` solves I_x(a, b) = u afresh for every u (about 3 us an element for the
seed's spreads), and a run draws one per request and rate class. ``beta_quantiles``
interpolates instead, on a table built once per (a, b):

* nodes u_i on [U_MIN, 1 - U_MIN] with the exact quantile x_i = betaincinv(a, b, u_i) and
  its exact first and second derivatives in u (from the Beta density f: 1 / f and
  -f' / f^3), joined by quintic Hermite pieces;
* every piece is checked at its midpoint (a Hermite piece's error peaks near there) and
  its quarter points, and split at its midpoint until the error is at most ``TOLERANCE``
  (1e-10, absolute, on a rate in [0, 1]); a table that cannot get there within
  ``MAX_NODES`` is not used;
* a check runs the interpolant forwards, not the inverse: the error of an interpolated
  x^ at u is e = x^ - x(u), and I_x^(a, b) - u = f(xi) e for some xi between them (mean
  value theorem; f the Beta density), so e = (I_x^ - u) / f(x^) to a relative 1e-9 (f
  barely moves over 1e-10 away from the singular ends, which ``U_MIN`` cuts off), with
  ``betainc`` at about a seventh of ``betaincinv``'s cost; only the midpoints that become
  nodes are inverted (their exact quantile is the new node's value);
* uniforms outside [U_MIN, 1 - U_MIN] (0.2% of them, where the quantile has its algebraic
  singularities) and calls with fewer than ``DIRECT_BELOW`` uniforms go to ``betaincinv``.

Every interpolated rate is within ``TOLERANCE`` of the exact quantile, which is increasing in
u and (for a fixed concentration) in the mean, so common random numbers hold to within
twice that on the rates (2e-10: a 32-bit acceptance threshold moves by at most one unit in
about two million).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

#: Largest absolute error of an interpolated rate (checked at every piece's midpoint).
TOLERANCE = 1e-10
#: Uniforms closer than this to 0 or 1 are inverted exactly.
U_MIN = 1e-3
#: Below this many uniforms a table costs more than it saves.
DIRECT_BELOW = 256
MAX_NODES = 4096
_START = 65
#: Where each piece is checked besides its midpoint, as fractions of its width.
_QUARTERS = (0.25, 0.75)


def _log_density(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """log f(x), f the Beta(a, b) density, ``log_beta`` = betaln(a, b) (computed once per
    table: a scalar call costs about 3 us); warnings off: callers handle the ends."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - log_beta


def _derivatives(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """(dx/du, d2x/du2) at the quantiles x, shape (2, n): 1 / f(x) and -(f'/f)(x) / f(x)^2,
    f the Beta(a, b) density, f'/f = (a - 1) / x - (b - 1) / (1 - x)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        first = np.exp(-_log_density(a, b, log_beta, x))
        second = -((a - 1.0) / x - (b - 1.0) / (1.0 - x)) * first * first
    return np.stack([first, second])


def _hermite(u: np.ndarray, u0, u1, x0, x1, d0, d1) -> np.ndarray:
    """Quintic Hermite interpolation on [u0, u1] through the values x0, x1 with first and
    second derivatives d0 = (x0', x0''), d1 = (x1', x1'') (each of shape (2, ...))."""
    h = u1 - u0
    t = (u - u0) / h
    t2 = t * t
    t3 = t2 * t
    t4, t5 = t3 * t, t3 * t2
    return (
        (1 - 10 * t3 + 15 * t4 - 6 * t5) * x0
        + (t - 6 * t3 + 8 * t4 - 3 * t5) * h * d0[0]
        + 0.5 * (t2 - 3 * t3 + 3 * t4 - t5) * h * h * d0[1]
        + (10 * t3 - 15 * t4 + 6 * t5) * x1
        + (-4 * t3 + 7 * t4 - 3 * t5) * h * d1[0]
        + 0.5 * (t3 - 2 * t4 + t5) * h * h * d1[1]
    )


def _density(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """The Beta(a, b) density at x (0 outside (0, 1))."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.exp(_log_density(a, b, log_beta, x))
    return np.where((x > 0.0) & (x < 1.0), f, 0.0)


def _errors_at_fractions(
    a: float,
    b: float,
    log_beta: float,
    u: np.ndarray,
    x: np.ndarray,
    d: np.ndarray,
    j: np.ndarray,
    fractions: tuple[float, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """At each fraction t of each piece ``j`` (shape (J,)): the points and the table's
    absolute errors there, each (len(fractions), J): (I_x^(a, b) - u) / f(x^) for the
    interpolated x^ (module docstring); infinite where x^ leaves (0, 1). One ``betainc``
    call for all of them."""
    t = np.asarray(fractions)[:, None]
    at = u[j] + t * (u[j + 1] - u[j])
    got = _hermite(at, u[j], u[j + 1], x[j], x[j + 1], d[:, j], d[:, j + 1])
    f = _density(a, b, log_beta, got)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(special.betainc(a, b, got) - at) / f
    return at, np.where(f > 0.0, err, np.inf)


@functools.lru_cache(maxsize=256)
def quantile_table(a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(nodes u, quantiles x, derivatives (2, n)) of a checked table, or None if it would need
    more than ``MAX_NODES`` nodes (or the slopes cannot be resolved)."""
    # Chebyshev-spaced start: denser towards the ends, where the quantile bends most
    u = U_MIN + (1.0 - 2.0 * U_MIN) * 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, _START)))
    log_beta = float(special.betaln(a, b))
    x = special.betaincinv(a, b, u)
    d = _derivatives(a, b, log_beta, x)
    unchecked = np.ones(u.size - 1, dtype=bool)  # pieces whose midpoint is not yet checked
    while unchecked.any():
        if u.size > MAX_NODES or not (np.all(np.isfinite(d)) and np.all(np.diff(x) > 0)):
            return None
        j = np.flatnonzero(unchecked)
        # the midpoint and the quarter points, each within half the tolerance: a midpoint
        # alone let a piece of Beta(0.037, 0.26) err by 3.6e-10 between its checks
        at, err = _errors_at_fractions(a, b, log_beta, u, x, d, j, (0.5, *_QUARTERS))
        mid, bad = at[0], (err > 0.5 * TOLERANCE).any(axis=0)
        unchecked[j] = False
        if not bad.any():
            break
        split = j[bad]  # each bad piece becomes two unchecked ones at its midpoint
        exact = special.betaincinv(a, b, mid[bad])
        u = np.insert(u, split + 1, mid[bad])
        x = np.insert(x, split + 1, exact)
        d = np.insert(d, split + 1, _derivatives(a, b, log_beta, exact), axis=1)
        unchecked = np.insert(unchecked, split + 1, True)
        unchecked[split + np.arange(split.size)] = True
    return u, x, d


def beta_quantiles(a: float, b: float, u: np.ndarray) -> np.ndarray:
    """The Beta(a, b) quantile at each u (shape of u): ``betaincinv(a, b, u)`` within
    ``TOLERANCE``."""
    u = np.asarray(u, dtype=float)
    table = quantile_table(float(a), float(b)) if u.size >= DIRECT_BELOW else None
    if table is None:
        return special.betaincinv(a, b, u)
    nodes, x, d = table
    inner = (u >= nodes[0]) & (u <= nodes[-1])
    out = np.empty_like(u)
    i = np.clip(np.searchsorted(nodes, u[inner], side="right") - 1, 0, nodes.size - 2)
    out[inner] = _hermite(u[inner], nodes[i], nodes[i + 1], x[i], x[i + 1], d[:, i], d[:, i + 1])
    if not inner.all():
        out[~inner] = special.betaincinv(a, b, u[~inner])
    return out
