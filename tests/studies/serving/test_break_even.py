"""Crossings of a gain curve through 1 and their band-inversion intervals (exact curves)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.break_even import STARTS, STOPS, find_crossings


def linear(intercept: float, slope: float, half: float, calls: list[float] | None = None):
    """g(x) = intercept + slope x with a band of +-half."""

    def curve(x: float) -> Ratio:
        if calls is not None:
            calls.append(x)
        g = intercept + slope * x
        return Ratio(g, (g - half, g + half))

    return curve


def test_integer_crossing_is_bisected_to_neighbours_and_interpolated():
    # g = 2 - x / 10 crosses 1 at x = 10; its band (+-0.1) at 9 and 11
    found = find_crossings([1, 2, 4, 8, 16, 32], linear(2.0, -0.1, 0.1), integer=True)
    assert len(found) == 1
    c = found[0]
    assert c.direction == STOPS
    assert c.at == pytest.approx(10.0)
    assert c.ci95[0] == pytest.approx(9.0)
    assert c.ci95[1] == pytest.approx(11.0)
    assert c.bracket[1] - c.bracket[0] <= 1


def test_rate_crossing_to_relative_tolerance_and_upward_direction():
    # g = 0.5 + x / 4 rises through 1 at x = 2; band +-0.05 -> 1.8 .. 2.2
    found = find_crossings([0.25, 0.5, 1, 4, 8], linear(0.5, 0.25, 0.05), integer=False)
    (c,) = found
    assert c.direction == STARTS
    assert c.at == pytest.approx(2.0, rel=1e-9)  # linear: interpolation is exact
    assert c.ci95[0] == pytest.approx(1.8, rel=1e-9)
    assert c.ci95[1] == pytest.approx(2.2, rel=1e-9)
    assert (c.bracket[1] - c.bracket[0]) <= 0.02 * c.bracket[0] * 1.0000001


def test_band_beyond_the_grid_is_open():
    # the upper bound stays above 1 on the whole grid: the late end is None
    found = find_crossings([1, 2, 4, 8], linear(1.9, -0.12, 0.5), integer=True)
    (c,) = found
    assert c.ci95[1] is None
    assert c.ci95[0] is not None and c.ci95[0] <= c.at


def test_no_refinement_interpolates_between_grid_loads_only():
    calls: list[float] = []
    curve = linear(2.0, -0.1, 0.0, calls)
    (c,) = find_crossings([1, 4, 16], curve, integer=True, rtol=None)
    assert set(calls) == {1.0, 4.0, 16.0}  # nothing simulated between grid loads
    assert c.bracket == (4.0, 16.0)
    assert c.at == pytest.approx(10.0)  # linear in load


def test_two_crossings_and_none():
    def bump(x: float) -> Ratio:
        g = 1.5 - ((x - 8.0) / 6.0) ** 2  # above 1 on (8 - 4.24, 8 + 4.24)
        return Ratio(g, (g - 0.01, g + 0.01))

    found = find_crossings([1, 2, 4, 8, 16, 32], bump, integer=True)
    assert [c.direction for c in found] == [STARTS, STOPS]
    assert found[0].at == pytest.approx(8 - 6 * math.sqrt(0.5), abs=0.1)
    assert found[1].at == pytest.approx(8 + 6 * math.sqrt(0.5), abs=0.1)
    assert find_crossings([1, 2, 4], linear(3.0, 0.0, 0.1), integer=True) == []


@settings(max_examples=40, deadline=None)
@given(
    root=st.floats(1.5, 60.0),
    slope=st.floats(0.01, 0.5),
    half=st.floats(0.0, 0.3),
)
def test_interval_brackets_the_estimate(root, slope, half):
    curve = linear(1.0 + slope * root, -slope, half)
    found = find_crossings([1, 2, 4, 8, 16, 32, 64], curve, integer=True)
    (c,) = found
    assert c.at == pytest.approx(root, abs=1e-6)
    lo, hi = c.ci95
    assert lo is None or lo <= c.at + 1e-9
    assert hi is None or hi >= c.at - 1e-9
