"""Hand-worked checks of crossings: values computed from the formulas and their sources."""

from __future__ import annotations

import math

import pytest

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.break_even import STOPS, find_crossings


def _curve(x: float) -> Ratio:
    g = 2.0 - x / 4.0  # crosses 1 at x = 4
    return Ratio(g, (g - 0.1, g + 0.1))


def test_rate_crossing_is_probed_around_the_interpolated_guess():
    """break_even.py _refine: on [1, 16] g falls from 1.75 to -2, so the linear guess is
    1 + 15 x 0.75 / 3.75 = 4; the probes 4 / sqrt(1 + 0.9 x 0.5) = 3.322 (g = 1.17, passes)
    and 4 x sqrt(1.45) = 4.817 (g = 0.80) leave a bracket 1.495 wide, within 0.5 x 3.322:
    two simulated loads where bisection takes three (4, 8, sqrt(32))."""
    calls: list[float] = []

    def curve(x: float) -> Ratio:
        calls.append(x)
        return _curve(x)

    (c,) = find_crossings([1.0, 16.0], curve, integer=False, rtol=0.5)
    assert c.direction == STOPS
    assert c.bracket == pytest.approx((4.0 / math.sqrt(1.45), 4.0 * math.sqrt(1.45)))
    assert c.at == pytest.approx(4.0)
    # two new loads for the estimate and two for each end of its band (g -+ 0.1 = 1 at
    # 3.6 and 4.4), where bisection takes three each
    assert len({x for x in calls if x not in (1.0, 16.0)}) == 6


def test_loads_already_simulated_narrow_the_bracket_first():
    """User counts simulated before (9, 10 and 11 around g = 2 - x / 10's crossing at 10:
    g(10) = 1 passes, g(11) = 0.9 fails) end the search without a new load."""
    calls: list[float] = []

    def curve(x: float) -> Ratio:
        calls.append(x)
        g = 2.0 - x / 10.0
        return Ratio(g, (g - 0.001, g + 0.001))

    (c,) = find_crossings([8.0, 16.0], curve, integer=True, seen=lambda: [9.0, 10.0, 11.0])
    assert c.bracket == (10.0, 11.0)
    assert set(calls) <= {8.0, 9.0, 10.0, 11.0, 16.0}
