"""Hand-worked checks of crossings: values computed from the formulas and their sources."""

from __future__ import annotations

import math

import pytest

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.break_even import STOPS, find_crossings


def _curve(x: float) -> Ratio:
    g = 2.0 - x / 4.0  # crosses 1 at x = 4
    return Ratio(g, (g - 0.1, g + 0.1))


def test_rate_crossing_is_bisected_geometrically():
    """break_even.py _refine: rate mids are sqrt(a b): [1, 16] -> 4 (passes) -> 8 -> sqrt(32), stop
    at 1.657 <= 0.5 x 4."""
    (c,) = find_crossings([1.0, 16.0], _curve, integer=False, rtol=0.5)
    assert c.direction == STOPS
    assert c.bracket == pytest.approx((4.0, math.sqrt(32.0)))
    assert c.at == pytest.approx(4.0)


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


def test_a_bracket_inside_the_answers_own_interval_is_refined_no_further():
    """g = 2 - x / 10 crosses 1 at x = 10, its band (+-0.1) at 9 (lower bound) and 11
    (upper bound). Without ``within`` every crossing is bisected to neighbouring user
    counts on [1, 32] (mids 16, 8, 12, 10, 11 for the estimate ...). With a range
    [2, 24] that holds the cell [8, 16] after one midpoint, each bisection stops there:
    the estimate is interpolated in [8, 16] (at 10 again: g is linear), and the 95%
    interval's ends are their brackets' outer ends (8 below, 16 above), so the interval
    holds the one refining gives ([9, 11])."""
    calls: list[float] = []

    def curve(x: float) -> Ratio:
        calls.append(x)
        g = 2.0 - x / 10.0
        return Ratio(g, (g - 0.1, g + 0.1))

    (full,) = find_crossings([1.0, 32.0], curve, integer=True)
    full_loads = set(calls)
    calls.clear()
    (c,) = find_crossings([1.0, 32.0], curve, integer=True, within=lambda a, b, d: (2.0, 24.0))
    assert full.bracket == (10.0, 11.0)
    assert c.bracket == (8.0, 16.0)
    assert c.at == pytest.approx(10.0)
    assert c.ci95 == (8.0, 16.0)
    assert full.ci95[0] == pytest.approx(9.0) and full.ci95[1] == pytest.approx(11.0)
    assert c.ci95[0] <= full.ci95[0] and full.ci95[1] <= c.ci95[1]
    assert set(calls) == {1.0, 32.0, 16.0, 8.0}
    assert len(full_loads) > len(set(calls))
    # a range the cell does not fit in: refined as before
    calls.clear()
    (same,) = find_crossings([1.0, 32.0], curve, integer=True, within=lambda a, b, d: (9.5, 10.5))
    assert same == full


def test_without_bands_only_the_estimate_is_bisected():
    """best-k reads a boundary's estimate alone: ``bands=False`` bisects g = 2 - x / 10 on
    [1, 32] to (10, 11) through 16, 8, 12, 10 and 11 (11 fails: g = 0.9) and simulates
    nothing for the band's ends (9 and 11 with the band, reached through 9 as well)."""
    calls: list[float] = []

    def curve(x: float) -> Ratio:
        calls.append(x)
        g = 2.0 - x / 10.0
        return Ratio(g, (g - 0.1, g + 0.1))

    (c,) = find_crossings([1.0, 32.0], curve, integer=True, bands=False)
    assert c.bracket == (10.0, 11.0) and c.ci95 == (None, None)
    assert set(calls) == {1.0, 32.0, 16.0, 8.0, 12.0, 10.0, 11.0}
    calls.clear()
    find_crossings([1.0, 32.0], curve, integer=True)
    assert 9.0 in calls
