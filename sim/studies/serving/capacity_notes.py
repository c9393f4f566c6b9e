"""The assumption lines ``capacity`` adds to its document
(sim/studies/serving/capacity.py): the capacity's resolution, the draws' ladder, the
completion's tolerance and the 95% ends whose bisection stopped inside the 90% interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sim.studies.serving.capacity_search import LADDER_LEVEL, LADDER_STEP, CapacitySearch

__all__ = ["LADDER_NOTE", "completion_note", "resolution_note", "stopped_notes"]


def completion_note(tolerances: Sequence[float]) -> list[str]:
    """The assumption line of the completion's tolerance (none where it is 0)."""
    if not tolerances or not all(t > 0 for t in tolerances):
        return []
    got = ", ".join(f"{100 * t:.1f}%" for t in tolerances)
    return [
        "draws: a ladder rate's nominal stopped early grows until the move its other "
        "replications could still make to a draw's capacity has a standard deviation of "
        "at most a quarter of the model-error term's sigma (the capacity's, and the "
        f"gain's over sqrt(2)), in log rate {got} (plain decoding, then each k): at 90% "
        "at most a quarter of the 90% interval's half-width (docs/study-speed.md)"
    ]


def resolution_note(rtol: float) -> str:
    """The assumption line of a capacity's resolution (its bisection's ``rtol``)."""
    return (
        f"capacity: the mean attainment's crossing of the share, interpolated in log rate "
        f"between the last passing and the first failing rate of a bisection to "
        f"{100 * rtol:.1f}% (--rtol; by default one step of the draws' ladder, as each "
        f"draw's capacity is read: docs/studies/speed-capacity-precision.md)"
    )


LADDER_NOTE = (
    f"draws: each draw's capacity is its crossing of the share between two neighbouring "
    f"rates of its own ladder, {100 * math.expm1(LADDER_STEP):.1f}% apart (log 2 / "
    f"{2**LADDER_LEVEL}), interpolated in log rate on its attainment there (the nominal "
    f"mean moved by the draw's paired shift on the same seeds where the nominal search ran, "
    f"its own replications' mean at the ladder rates it did not, where the nominal does "
    f"not run): within one ladder step of where its attainment crosses the share, wherever "
    f"the nominal search's rates lie; the shift is scaled by min(1, the draw's "
    f"replications' standard deviation over the nominal's), so a draw far below its own "
    f"capacity (its replications near 1) keeps its own attainment (docs/study-speed.md)"
)


def stopped_notes(searches: Sequence[CapacitySearch]) -> list[str]:
    """One line for the 95% ends whose bisection stopped inside the 90% interval's
    range (none: no line)."""
    ends = []
    for s in searches:
        name = f"k = {s.k}" if s.k else "plain decoding"
        for which, (a, b), (lo, hi) in s.stopped:
            end = "lower" if which == "lo" else "upper"
            ends.append(f"{name} {end} [{a:.4g}, {b:.4g}] in [{lo:.4g}, {hi:.4g}]")
    if not ends:
        return []
    return [
        "95% ends: a bisection stopped once its bracket lay inside the range the 90% "
        "interval holds from the draws and the model-error band, and the end is its "
        "bracket's outer end (wider than the band inversion, never narrower; the 90% "
        "interval the one a full bisection gives), requests/s: " + "; ".join(ends)
    ]
