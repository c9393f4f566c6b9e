"""Where a paired gain crosses 1 along a load axis, with a 95% interval by band inversion.

The gain g(x) of speculation over plain decoding at load x (users, or requests per second)
is a Monte Carlo estimate with a 95% band [lo(x), hi(x)] (sim/studies/serving/paired_metrics.py).
Every load is simulated at the same seed, so neighbouring loads share common random
numbers and the estimate moves smoothly with x.

* Crossings of the estimate: each pair of neighbouring grid loads on which g - 1 changes
  sign, refined by bisection (to neighbouring integers for a closed loop, to a relative
  ``rtol`` for a rate), the crossing itself interpolated linearly between the last two
  loads. ``stops paying``: g falls through 1 as load rises; ``starts paying``: it rises
  through 1.
* Its interval inverts the band, as sim/studies/bisection.py does for a target: the ends are
  the loads where the band's bounds cross 1 nearest to the estimate. For a crossing that
  stops paying, speculation may already stop paying where the lower bound falls below 1 and
  surely has where the upper bound does; for one that starts paying, the other way round.
  An end is None when that bound does not cross 1 on the grid (it lies beyond the grid).

The interval reflects Monte Carlo noise only, not model error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sim.simulation.serving.metrics import Ratio

__all__ = [
    "STARTS",
    "STOPS",
    "Crossing",
    "bisection_steps",
    "cell_loads",
    "find_crossings",
    "refinement_bound",
]

STOPS, STARTS = "stops paying", "starts paying"
#: Which bound of the band crosses first (at the lower load) for each direction.
_EARLY = {STOPS: "lo", STARTS: "hi"}
_LATE = {STOPS: "hi", STARTS: "lo"}


@dataclass(frozen=True, slots=True)
class Crossing:
    """One crossing of the gain through 1: ``at`` (interpolated load), ``ci95`` (loads),
    ``bracket`` (the neighbouring simulated loads around it) and ``direction``;
    ``ci95_brackets``: the simulated loads around each end of ``ci95`` (None where it has
    none). A user count is a whole number: its crossing is the bracket's upper load, the
    fewest users on the new side, and its interval the upper loads of ``ci95_brackets``."""

    direction: str
    at: float
    ci95: tuple[float | None, float | None]
    bracket: tuple[float, float]
    ci95_brackets: tuple[tuple[float, float] | None, tuple[float, float] | None] = (None, None)

    def to_dict(self) -> dict[str, object]:
        return {
            "direction": self.direction,
            "at": self.at,
            "ci95": list(self.ci95),
            "bracket": list(self.bracket),
            "ci95_brackets": [None if b is None else list(b) for b in self.ci95_brackets],
        }


def _stat(r: Ratio, which: str) -> float:
    if which == "mean":
        return r.mean
    if r.ci95 is None:
        return math.nan
    return r.ci95[0] if which == "lo" else r.ci95[1]


def _refine(
    curve: Callable[[float], Ratio],
    which: str,
    a: float,
    b: float,
    integer: bool,
    rtol: float | None,
) -> tuple[float, tuple[float, float]]:
    """Bisect [a, b] (a < b, stat(a) and stat(b) on either side of 1) to neighbouring
    integers or to ``rtol`` (None: no bisection); the crossing interpolated linearly
    between the last two."""
    side_a = _stat(curve(a), which) >= 1.0
    while rtol is not None:
        if integer:
            if b - a <= 1:
                break
            mid = float((int(a) + int(b)) // 2)
        else:
            if b - a <= rtol * a:
                break
            mid = math.sqrt(a * b)
        if (_stat(curve(mid), which) >= 1.0) == side_a:
            a = mid
        else:
            b = mid
    fa, fb = _stat(curve(a), which), _stat(curve(b), which)
    t = (fa - 1.0) / (fa - fb) if fa != fb else 0.5
    return a + min(1.0, max(0.0, t)) * (b - a), (a, b)


def bisection_steps(a: float, b: float, *, integer: bool, rtol: float | None) -> int:
    """Midpoints ``_refine`` simulates between ``a`` < ``b`` at most: integers halve the
    width ``b - a`` down to 1, ceil(log2(b - a)) steps; rates bisect geometrically,
    halving log(b / a) down to log(1 + rtol), ceil(log2(log(b / a) / log1p(rtol)))
    steps; none without refinement (``rtol`` None) or within the tolerance already."""
    if rtol is None:
        return 0
    if integer:
        return max(0, math.ceil(math.log2(b - a))) if b - a > 1 else 0
    if b - a <= rtol * a:
        return 0
    return max(1, math.ceil(math.log2(math.log(b / a) / math.log1p(rtol))))


def refinement_bound(
    xs: Sequence[float],
    curves: Sequence[Callable[[float], Ratio]],
    *,
    integer: bool,
    rtol: float | None = 0.02,
) -> int:
    """The most distinct loads ``find_crossings(xs, curve, ...)`` simulates between grid
    loads for all of ``curves`` (metrics of the same runs: a load simulated for one is
    there for all), from the grid alone (the curves at the grid loads, already simulated).

    A bisection runs in a cell only where its statistic (the estimate, or a bound of its
    95% band, of a curve that crosses at all) changes side; ``m`` bisections of a cell
    share its first midpoint, then split: step j visits at most min(2^(j-1), m) loads,
    over the cell's ``bisection_steps``, and never more than the integers inside it."""
    if rtol is None:
        return 0
    grid = sorted(set(xs))
    total = 0
    for a, b in itertools.pairwise(grid):
        m = 0
        for curve in curves:
            fine = [x for x in grid if math.isfinite(curve(x).mean)]
            crosses = any(
                (curve(u).mean >= 1.0) != (curve(v).mean >= 1.0)
                for u, v in itertools.pairwise(fine)
            )
            if crosses and a in fine and b in fine:
                m += sum(
                    (_stat(curve(a), w) >= 1.0) != (_stat(curve(b), w) >= 1.0)
                    for w in ("mean", "lo", "hi")
                )
        total += cell_loads(a, b, m, integer=integer, rtol=rtol)
    return total


def cell_loads(a: float, b: float, bisections: int, *, integer: bool, rtol: float | None) -> int:
    """The most distinct loads ``bisections`` bisections of the cell (a, b) simulate:
    they share the first midpoint, then split, step j visiting at most
    min(2^(j-1), bisections) loads over the cell's ``bisection_steps``; integers never
    more than those inside the cell."""
    steps = bisection_steps(a, b, integer=integer, rtol=rtol)
    loads = sum(min(2 ** (j - 1), bisections) for j in range(1, steps + 1))
    return min(loads, max(0, math.ceil(b) - math.floor(a) - 1)) if integer else loads


def _band_end(
    curve: Callable[[float], Ratio],
    xs: Sequence[float],
    i: int,
    which: str,
    late: bool,
    integer: bool,
    rtol: float | None,
) -> tuple[float, tuple[float, float]] | None:
    """The crossing of bound ``which`` through 1 nearest to the estimate's bracket
    (xs[i], xs[i + 1]), with its own bracket: searched towards lower loads (``late``
    False) or higher ones."""
    above = [_stat(curve(x), which) >= 1.0 for x in xs]
    if any(math.isnan(_stat(curve(x), which)) for x in xs):
        return None
    if late:
        for j in range(i + 1, len(xs)):
            if above[j] != above[j - 1]:
                return _refine(curve, which, xs[j - 1], xs[j], integer, rtol)
        return None
    for j in range(i, -1, -1):
        if above[j] != above[j + 1]:
            return _refine(curve, which, xs[j], xs[j + 1], integer, rtol)
    return None


def find_crossings(
    xs: Sequence[float],
    curve: Callable[[float], Ratio],
    *,
    integer: bool,
    rtol: float | None = 0.02,
) -> list[Crossing]:
    """Every crossing of the gain estimate through 1 on the increasing grid ``xs``.

    ``curve(x)`` gives the paired gain at load x (and may simulate a new load: the
    refinement asks for loads between grid points). ``rtol`` None: no refinement, the
    crossings are interpolated between grid loads. Loads where the gain is not finite
    are skipped.
    """
    grid = [x for x in sorted(set(xs)) if math.isfinite(curve(x).mean)]
    out: list[Crossing] = []
    for i in range(len(grid) - 1):
        a, b = grid[i], grid[i + 1]
        ga, gb = curve(a).mean, curve(b).mean
        if (ga >= 1.0) == (gb >= 1.0):
            continue
        direction = STOPS if ga >= 1.0 else STARTS
        at, bracket = _refine(curve, "mean", a, b, integer, rtol)
        early = _band_end(curve, grid, i, _EARLY[direction], False, integer, rtol)
        late = _band_end(curve, grid, i, _LATE[direction], True, integer, rtol)
        ends = (early[0] if early else None, late[0] if late else None)
        out.append(
            Crossing(
                direction,
                at,
                ends,
                bracket,
                (early[1] if early else None, late[1] if late else None),
            )
        )
    return out
