"""Where a paired gain crosses 1 along a load axis, with a 95% interval by band inversion.

The gain g(x) of speculation over plain decoding at load x (users, or requests per second)
is a Monte Carlo estimate with a 95% band [lo(x), hi(x)] (sim/studies/serving/paired_metrics.py).
Every load is simulated at the same seed, so neighbouring loads share common random
numbers and the estimate moves smoothly with x.

* Crossings of the estimate: each pair of neighbouring grid loads on which g - 1 changes
  sign, narrowed to neighbouring integers for a closed loop (to a relative ``rtol`` for a
  rate), first by the loads already simulated, then by bisection (``_refine``), the
  crossing itself interpolated linearly between the last two loads. ``stops paying``: g
  falls through 1 as load rises; ``starts paying``: it rises through 1.
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sim.simulation.serving.metrics import Ratio

__all__ = [
    "STARTS",
    "STOPS",
    "Crossing",
    "Within",
    "bisection_steps",
    "cell_loads",
    "find_crossings",
    "refinement_bound",
    "stopped_short",
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


def _narrowed(
    curve: Callable[[float], Ratio],
    which: str,
    a: float,
    b: float,
    seen: Iterable[float],
    last: bool = False,
) -> tuple[float, float]:
    """[a, b] narrowed, without simulating, to the first sign change of stat - 1 among the
    loads already simulated inside it (``seen``); ``last``: to the last one (a band's end
    below the estimate is the crossing nearest to it)."""
    inside = sorted(x for x in set(seen) if a < x < b)
    if last:
        side_b = _stat(curve(b), which) >= 1.0
        for x in reversed(inside):
            if (_stat(curve(x), which) >= 1.0) == side_b:
                b = x
            else:
                return x, b
        return a, b
    side_a = _stat(curve(a), which) >= 1.0
    for x in inside:
        if (_stat(curve(x), which) >= 1.0) == side_a:
            a = x
        else:
            return a, x
    return a, b


def _refine(
    curve: Callable[[float], Ratio],
    which: str,
    a: float,
    b: float,
    integer: bool,
    rtol: float | None,
    seen: Iterable[float] = (),
    last: bool = False,
    inside: tuple[float, float] | None = None,
) -> tuple[float, tuple[float, float], bool]:
    """Shrink [a, b] (0 < a < b, stat(a) and stat(b) on either side of 1) to neighbouring
    integers or to a relative width ``rtol`` (None: not at all); the crossing interpolated
    linearly between the last two, and whether the bisection stopped short of that
    resolution because the bracket lies within ``inside`` (``Within``).

    First to the loads already simulated (``seen``, ``_narrowed``; ``last``: to the last
    sign change among them, not the first), then by bisection (integer or geometric
    midpoints). Narrowing only removes bisection steps, so ``refinement_bound`` still
    bounds the loads simulated. Guided probes around the interpolated crossing were
    tried: on users they ran more loads than bisection (brackets 1-8 users wide: crossover
    72 for 71, best-k 131 for 127 on the shipped serving scenario), and on rates fewer
    (58 for 62) but beyond the bisection bound the progress bar announces.
    """

    def done(a: float, b: float) -> bool:
        return b - a <= 1 if integer else b - a <= rtol * a  # type: ignore[operator]

    def enough(a: float, b: float) -> bool:
        return inside is not None and inside[0] <= a and b <= inside[1]

    if rtol is not None:
        a, b = _narrowed(curve, which, a, b, seen, last)
    side_a = _stat(curve(a), which) >= 1.0

    def probe(x: float, a: float, b: float) -> tuple[float, float]:
        if not a < x < b:
            return a, b
        return (x, b) if (_stat(curve(x), which) >= 1.0) == side_a else (a, x)

    while rtol is not None and not done(a, b) and not enough(a, b):
        mid = float((int(a) + int(b)) // 2) if integer else math.sqrt(a * b)
        a, b = probe(mid, a, b)
    fa, fb = _stat(curve(a), which), _stat(curve(b), which)
    t = (fa - 1.0) / (fa - fb) if fa != fb else 0.5
    short = rtol is not None and not done(a, b)
    return a + min(1.0, max(0.0, t)) * (b - a), (a, b), short


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
    seen: Callable[[], Iterable[float]],
    inside: tuple[float, float] | None = None,
) -> tuple[float, tuple[float, float]] | None:
    """The crossing of bound ``which`` through 1 nearest to the estimate's bracket
    (xs[i], xs[i + 1]), with its own bracket: searched towards lower loads (``late``
    False) or higher ones. A bisection stopped short within ``inside`` gives its
    bracket's outer end (the lower load for the early end, the higher for the late one):
    the interval is then wider than the inverted band, never narrower."""
    above = [_stat(curve(x), which) >= 1.0 for x in xs]
    if any(math.isnan(_stat(curve(x), which)) for x in xs):
        return None
    # the cells (j, j + 1) from the estimate's outwards: to higher loads, or to lower ones
    for j in range(i, len(xs) - 1) if late else range(i, -1, -1):
        if above[j] != above[j + 1]:
            a, b = xs[j], xs[j + 1]
            at, bracket, short = _refine(
                curve, which, a, b, integer, rtol, seen(), last=not late, inside=inside
            )
            return (bracket[1] if late else bracket[0]) if short else at, bracket
    return None


def stopped_short(c: Crossing, integer: bool, rtol: float | None) -> bool:
    """Whether a bisection of crossing ``c`` (its estimate's or an end of its 95%
    interval's) stopped before neighbouring integers or a relative width ``rtol`` (None:
    no refinement, nothing stopped), inside ``find_crossings``' ``within``."""
    if rtol is None:
        return False
    brackets = [c.bracket, *(b for b in c.ci95_brackets if b is not None)]
    return any(b - a > 1 if integer else b - a > rtol * a for a, b in brackets)


#: (a, b, direction) -> for a crossing of the estimate in the grid cell (a, b): the loads
#: (low, high) within which its answer's own interval already lies wherever the crossing
#: and its 95% interval's ends fall (crossover: the 5-95% of the draws' crossings, which
#: the 90% interval holds), so that a bracket inside them is refined no further; None:
#: refine to the resolution.
Within = Callable[[float, float, str], tuple[float, float] | None]


def find_crossings(
    xs: Sequence[float],
    curve: Callable[[float], Ratio],
    *,
    integer: bool,
    rtol: float | None = 0.02,
    seen: Callable[[], Iterable[float]] = tuple,
    within: Within | None = None,
    bands: bool = True,
) -> list[Crossing]:
    """Every crossing of the gain estimate through 1 on the increasing grid ``xs``.

    ``curve(x)`` gives the paired gain at load x (and may simulate a new load: the
    refinement asks for loads between grid points). ``rtol`` None: no refinement, the
    crossings are interpolated between grid loads. Loads where the gain is not finite
    are skipped. ``seen()``: the loads ``curve`` has already simulated, which narrow each
    refinement before it simulates anything (``_refine``). ``within``: the bisections of
    a crossing and of its 95% interval's ends stop once their bracket lies inside the
    range it gives (``Within``): the crossing is then interpolated in a wider bracket and
    an end of its 95% interval is its bracket's outer end. ``bands`` False: the 95%
    interval is not sought (both ends None, nothing simulated for it), for a caller that
    reads the estimate alone.
    """
    grid = [x for x in sorted(set(xs)) if math.isfinite(curve(x).mean)]
    out: list[Crossing] = []
    for i in range(len(grid) - 1):
        a, b = grid[i], grid[i + 1]
        ga, gb = curve(a).mean, curve(b).mean
        if (ga >= 1.0) == (gb >= 1.0):
            continue
        direction = STOPS if ga >= 1.0 else STARTS
        inside = None if within is None else within(a, b, direction)
        at, bracket, _ = _refine(curve, "mean", a, b, integer, rtol, seen(), inside=inside)
        early = late = None
        if bands:
            early = _band_end(curve, grid, i, _EARLY[direction], False, integer, rtol, seen, inside)
            late = _band_end(curve, grid, i, _LATE[direction], True, integer, rtol, seen, inside)
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
