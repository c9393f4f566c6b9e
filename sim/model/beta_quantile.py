"""The Beta quantile for many uniforms at once, cheaper than ``scipy.special.betaincinv``.

``betaincinv`` solves I_x(a, b) = u afresh for every u (an iterative solve per element),
and a run draws one per request and rate class. ``beta_quantiles`` interpolates instead,
on a table built once per (a, b) and bound model (its rate class keeps it):

* nodes u_i on [U_MIN, 1 - U_MIN] with the exact quantile x_i = x(u_i) and its exact first
  three derivatives in u (from the Beta density: ``_derivatives``), joined by septic
  Hermite pieces (error x^(8) h^8 t^4 (1 - t)^4 / 8! on a piece of width h);
* every piece is checked at its midpoint (a Hermite piece's error peaks near there) and
  its quarter points; a piece that errs by more than half of ``TOLERANCE`` (1e-10,
  absolute, on a rate in [0, 1]) at any of them is cut into n equal pieces, n from its
  error (n pieces err about err / n^8; n aims at a quarter of the tolerance, 2 to 8), and
  the parts are checked in turn, until every piece passes; a table that cannot get there
  within ``MAX_NODES`` nodes is not used;
* a check runs the interpolant forwards, not the inverse: the error of an interpolated
  x^ at u is e = x^ - x(u), and I_x^(a, b) - u = f(xi) e for some xi between them (mean
  value theorem; f the Beta density), so e = (I_x^ - u) / f(x^) to a relative 1e-9 (f
  barely moves over 1e-10 away from the singular ends, which ``U_MIN`` cuts off), with
  ``betainc`` at a third to a seventh of ``betaincinv``'s cost;
* the start nodes are inverted by ``betaincinv``, a cut's new nodes by Halley's method on
  I_x(a, b) = u from the piece's own values (``_polished``: about two ``betainc`` a node);
* against the table before 2026-12 (quintic pieces split at their midpoints, every new
  node inverted) a table has half the nodes (74-84 against 151-176 for the spreads of the
  shipped scenarios) and costs a third in special functions; the rates it gives
  moved, each within the tolerance of the exact quantile, as before;
* uniforms outside [U_MIN, 1 - U_MIN] (0.2% of them, where the quantile has its algebraic
  singularities) and calls with fewer than ``DIRECT_BELOW`` uniforms go to ``betaincinv``.

Every interpolated rate is within ``TOLERANCE`` of the exact quantile, which is increasing in
u and (for a fixed concentration) in the mean, so common random numbers hold to within
twice that on the rates (2e-10: a 32-bit acceptance threshold moves by at most one unit in
about two million).
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: Largest absolute error of an interpolated rate (checked at every piece's midpoint).
TOLERANCE = 1e-10
#: Uniforms closer than this to 0 or 1 are inverted exactly.
U_MIN = 1e-3
#: Below this many uniforms a table costs more than it saves.
DIRECT_BELOW = 256
MAX_NODES = 4096
_START = 33
#: Where each piece is checked besides its midpoint, as fractions of its width.
_QUARTERS = (0.25, 0.75)
#: A new node's Halley iteration stops once its step is below this fraction of its value.
_POLISHED = 1e-13
_HALLEY_STEPS = 4
#: A failed piece is cut for an error of this fraction of the tolerance.
_AIM = 0.25
_MOST_CUTS = 8

#: A checked table: nodes u (n,), quantiles x (n,), their derivatives in u (3, n).
Table = tuple[np.ndarray, np.ndarray, np.ndarray]


def _log_density(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """log f(x), f the Beta(a, b) density, ``log_beta`` = betaln(a, b) (computed once per
    table, not per node); warnings off: callers handle the ends."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - log_beta


def _derivatives(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """The first three derivatives of the quantile in u at the quantiles x, shape (3, n).

    With f the Beta(a, b) density and L = f'/f = (a - 1) / x - (b - 1) / (1 - x):
    dx/du = 1 / f(x), d2x/du2 = -L (dx/du)^2, d3x/du3 = (2 L^2 - dL/dx) (dx/du)^3, where
    dL/dx = -(a - 1) / x^2 - (b - 1) / (1 - x)^2."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        first = np.exp(-_log_density(a, b, log_beta, x))
        slope = (a - 1.0) / x - (b - 1.0) / (1.0 - x)
        bend = -(a - 1.0) / (x * x) - (b - 1.0) / ((1.0 - x) * (1.0 - x))
        second = -slope * first * first
        third = (2.0 * slope * slope - bend) * first * first * first
    return np.stack([first, second, third])


def _hermite(u: np.ndarray, u0, u1, x0, x1, d0, d1) -> np.ndarray:
    """Septic Hermite interpolation on [u0, u1] through the values x0, x1 with their first
    three derivatives d0, d1 (each of shape (3, ...)).

    The two-point Hermite basis with four conditions an end: at the left end
    H_k(t) = t^k / k! (1 - t)^4 sum_{j <= 3 - k} C(3 + j, j) t^j, at the right end
    (-1)^k H_k(1 - t); the error is x^(8)(xi) h^8 t^4 (1 - t)^4 / 8! (h = u1 - u0)."""
    h = u1 - u0
    t = (u - u0) / h
    s = 1.0 - t
    h2, h3 = 0.5 * h * h, h * h * h / 6.0
    left = x0 * (1.0 + t * (4.0 + t * (10.0 + 20.0 * t)))
    left += h * d0[0] * t * (1.0 + t * (4.0 + 10.0 * t))
    left += h2 * d0[1] * t * t * (1.0 + 4.0 * t)
    left += h3 * d0[2] * t * t * t
    right = x1 * (1.0 + s * (4.0 + s * (10.0 + 20.0 * s)))
    right -= h * d1[0] * s * (1.0 + s * (4.0 + 10.0 * s))
    right += h2 * d1[1] * s * s * (1.0 + 4.0 * s)
    right -= h3 * d1[2] * s * s * s
    s2, t2 = s * s, t * t
    return s2 * s2 * left + t2 * t2 * right


def _density(a: float, b: float, log_beta: float, x: np.ndarray) -> np.ndarray:
    """The Beta(a, b) density at x (0 outside (0, 1))."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.exp(_log_density(a, b, log_beta, x))
    return np.where((x > 0.0) & (x < 1.0), f, 0.0)


def _forward(
    a: float, b: float, log_beta: float, at: np.ndarray, got: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(I_x^(a, b) - u, f(x^)) at points u = ``at`` with table values x^ = ``got`` (same
    shapes): the forward residual and the Beta density there (0 outside (0, 1)). One
    ``betainc`` call."""
    return special.betainc(a, b, got) - at, _density(a, b, log_beta, got)


def _abs_errors(residual: np.ndarray, f: np.ndarray) -> np.ndarray:
    """|x^ - x(u)| = |I_x^ - u| / f(x^) (module docstring); infinite where x^ leaves (0, 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(f > 0.0, np.abs(residual) / f, np.inf)


def _in_pieces(
    u: np.ndarray, x: np.ndarray, d: np.ndarray, j: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The points at fractions ``t`` of the pieces ``j`` and the table's values there (t and
    j broadcast together: fractions (F, 1) of every piece (J,) give (F, J); one fraction
    a piece gives (J,))."""
    at = u[j] + t * (u[j + 1] - u[j])
    return at, _hermite(at, u[j], u[j + 1], x[j], x[j + 1], d[:, j], d[:, j + 1])


def _polished(
    a: float,
    b: float,
    log_beta: float,
    at: np.ndarray,
    got: np.ndarray,
) -> np.ndarray:
    """The exact quantiles at ``at`` (shape (n,)), from the table's values ``got`` there.

    Halley steps on g(x) = I_x(a, b) - u (g' = f, g''/g' = (a - 1) / x - (b - 1) / (1 - x)),
    one ``betainc`` each; a point is done once its step is below ``_POLISHED`` of its value
    (cubic convergence: the step of a converged iteration bounds its error). A point that
    does not converge within ``_HALLEY_STEPS`` steps, or leaves (0, 1), is inverted by
    ``betaincinv``. Two or three ``betainc`` a node this way cost less than one
    ``betaincinv``."""
    x = got.copy()
    todo = np.arange(at.size)
    residual, f = _forward(a, b, log_beta, at, got)
    lost = []  # points whose iteration left (0, 1): inverted directly
    for _ in range(_HALLEY_STEPS):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            newton = residual / f
            bend = (a - 1.0) / x[todo] - (b - 1.0) / (1.0 - x[todo])
            step = newton / (1.0 - 0.5 * newton * bend)
        stepped = x[todo] - step
        ok = np.isfinite(stepped) & (stepped > 0.0) & (stepped < 1.0) & (f > 0.0)
        x[todo[ok]] = stepped[ok]
        lost.append(todo[~ok])
        todo = todo[ok & (np.abs(step) > _POLISHED * stepped)]
        if not todo.size:
            break
        residual, f = _forward(a, b, log_beta, at[todo], x[todo])
    rest = np.concatenate([todo, *lost])
    if rest.size:
        x[rest] = special.betaincinv(a, b, at[rest])
    return x


def _subdivisions(err: np.ndarray) -> np.ndarray:
    """How many pieces to cut each failed piece into, from its largest checked error
    ``err`` (shape (J,)): a septic Hermite piece's error scales as its width^8, so n
    pieces of it err about err / n^8; n is chosen for ``_AIM`` of the tolerance, at least 2
    and at most ``_MOST_CUTS`` (where the error falls faster than that near a singular end,
    cutting by more overshoots: 64 cuts tripled the nodes of Beta(0.037, 0.26))."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        n = np.ceil((err / (_AIM * TOLERANCE)) ** (1.0 / 8.0))
    return np.clip(np.nan_to_num(n, nan=_MOST_CUTS, posinf=_MOST_CUTS), 2, _MOST_CUTS).astype(int)


def quantile_table(a: float, b: float) -> Table | None:
    """(nodes u, quantiles x, derivatives (3, n)) of a checked table, or None if it would need
    more than ``MAX_NODES`` nodes (or the slopes cannot be resolved).

    Each round checks the pieces not yet checked; a piece that fails is cut into as many
    equal pieces as its error says it needs (``_subdivisions``), whose new nodes are
    polished from the piece's own values (``_polished``) and checked in the next round."""
    # Chebyshev-spaced start: denser towards the ends, where the quantile bends most
    u = U_MIN + (1.0 - 2.0 * U_MIN) * 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, _START)))
    log_beta = float(special.betaln(a, b))
    x = special.betaincinv(a, b, u)
    d = _derivatives(a, b, log_beta, x)
    unchecked = np.ones(u.size - 1, dtype=bool)  # pieces not yet checked
    while unchecked.any():
        if u.size > MAX_NODES or not (np.all(np.isfinite(d)) and np.all(np.diff(x) > 0)):
            return None
        j = np.flatnonzero(unchecked)
        unchecked[j] = False
        # the midpoint and the quarter points, each within half the tolerance: a midpoint
        # alone let a piece of Beta(0.037, 0.26) err by 3.6e-10 between its checks
        at, got = _in_pieces(u, x, d, j, np.array([0.5, *_QUARTERS])[:, None])
        err = _abs_errors(*_forward(a, b, log_beta, at, got)).max(axis=0)
        bad = err > 0.5 * TOLERANCE
        if not bad.any():
            break
        split = j[bad]
        cuts = _subdivisions(err[bad])
        new = cuts - 1
        piece = np.repeat(split, new)  # the piece each new node falls in: 1/n .. (n-1)/n
        within = np.arange(piece.size) - np.repeat(np.cumsum(new) - new, new) + 1
        at, got = _in_pieces(u, x, d, piece, within / np.repeat(cuts, new))
        exact = _polished(a, b, log_beta, at, got)
        u = np.insert(u, piece + 1, at)
        x = np.insert(x, piece + 1, exact)
        d = np.insert(d, piece + 1, _derivatives(a, b, log_beta, exact), axis=1)
        counts = np.ones(unchecked.size, dtype=int)
        counts[split] = cuts
        unchecked[split] = True
        unchecked = np.repeat(unchecked, counts)  # a cut piece's parts, all unchecked
    return u, x, d


def beta_quantiles(
    a: float, b: float, u: np.ndarray, tables: dict[tuple[float, float], Table | None] | None = None
) -> np.ndarray:
    """The Beta(a, b) quantile at each u (shape of u): ``betaincinv(a, b, u)`` within
    ``TOLERANCE``.

    ``tables``: the caller's tables by (a, b), filled as they are built (a bound model's
    rate class holds one, sim/model/acceptance.py, so a run builds each Beta's table once);
    None builds the table for this call only."""
    u = np.asarray(u, dtype=float)
    if u.size < DIRECT_BELOW:
        return special.betaincinv(a, b, u)
    key = (float(a), float(b))
    if tables is None:
        table = quantile_table(*key)
    elif key in tables:
        table = tables[key]
    else:
        table = tables[key] = quantile_table(*key)
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
