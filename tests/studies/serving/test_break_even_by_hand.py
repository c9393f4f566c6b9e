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
