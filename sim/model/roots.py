"""Brent's root finder in plain Python (start-up: no import of scipy.optimize).

``brentq`` follows SciPy's C implementation step for step (scipy/optimize/Zeros/brentq.c,
Charles Harris; after Brent 1973, "Algorithms for Minimization without Derivatives",
ch. 4): the same inverse quadratic / secant steps, the same bisection safeguard and the same
stopping rule, so for the same function it returns the same float as
``scipy.optimize.brentq`` (tests/model/test_roots.py compares them bit for bit).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sim.errors import SpecsimError

#: scipy.optimize.brentq's defaults: xtol 2e-12, rtol 4 * machine epsilon, 100 iterations.
XTOL = 2e-12
RTOL = 4 * 2.220446049250313e-16
MAXITER = 100


def brentq(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    xtol: float = XTOL,
    rtol: float = RTOL,
    maxiter: int = MAXITER,
) -> float:
    """A root of ``f`` in [a, b], where f(a) and f(b) have opposite signs (or one is 0).

    Converged when the bracket's half-width is below (xtol + rtol |x|) / 2. Raises
    SpecsimError when the signs agree, and RuntimeError when ``maxiter`` is exhausted.
    """
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = float(f(xpre)), float(f(xcur))
    if fpre == 0.0:
        return xpre
    if fcur == 0.0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise SpecsimError(f"f({a}) and f({b}) must have opposite signs", param="bracket")
    for _ in range(maxiter):
        if fpre != 0.0 and fcur != 0.0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0.0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # secant (interpolate)
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # inverse quadratic (extrapolate)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # good short step
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur))
    raise RuntimeError(f"brentq did not converge in {maxiter} iterations")


def increasing_root(
    g: Callable[[float], float],
    level: float,
    lo: float,
    hi: float,
    *,
    hint: float,
    slope: float | None = None,
    xtol: float = 1e-10,
    maxiter: int = 60,
) -> tuple[float | None, float | None]:
    """The least x in [lo, hi] with g(x) >= ``level`` for a continuous increasing ``g``.

    Returns (x, slope): None for x when g(hi) < level, ``lo`` when g(lo) >= level, else the
    root within ``xtol``; slope is the last secant slope seen (None when none was measured).
    Safeguarded secant: it starts at ``hint`` with a Newton step of ``slope`` (e.g. from a
    closed form) and keeps a bracket, bisecting whenever a step would leave it, so few
    evaluations are needed near a good hint and at most ~log2((hi - lo) / xtol) otherwise.
    """
    g_hi = g(hi)
    if g_hi < level:
        return None, None
    g_lo = g(lo)
    if g_lo >= level:
        return lo, None
    a, fa, b, fb = lo, g_lo - level, hi, g_hi - level  # fa < 0 <= fb
    x = min(max(hint, lo), hi)
    fx = g(x) - level
    prev: tuple[float, float] | None = None
    last_slope = slope
    for _ in range(maxiter):
        if fx < 0:
            a, fa = x, fx
        else:
            b, fb = x, fx
        if b - a <= xtol or fx == 0.0:
            break
        if prev is not None and prev[0] != x and prev[1] != fx:
            last_slope = (fx - prev[1]) / (x - prev[0])
        step_slope = last_slope if last_slope and last_slope > 0 else (fb - fa) / (b - a)
        nxt = x - fx / step_slope
        if not a < nxt < b:
            nxt = a - fa * (b - a) / (fb - fa)  # regula falsi inside the bracket
            if not a < nxt < b:
                nxt = (a + b) / 2
        if abs(nxt - x) <= xtol / 2:  # converged: step onto the passing side of the root
            nxt = x + (xtol / 2 if fx < 0 else -xtol / 2)
            nxt = min(max(nxt, a), b)
        prev = (x, fx)
        x, fx = nxt, g(nxt) - level
    if fx >= 0:
        b = x
    return b, last_slope
