"""The bisections' bound known before they run (the progress total of crossover and
best-k): never below the loads they simulate, and close to them."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.studies.serving.break_even import (
    bisection_steps,
    cell_loads,
    find_crossings,
    refinement_bound,
)
from tests.studies.serving.test_break_even import linear


def test_steps_by_hand():
    assert bisection_steps(1, 8, integer=True, rtol=0.02) == 3  # 7 -> 4 -> 2 -> 1
    assert bisection_steps(32, 64, integer=True, rtol=0.02) == 5
    assert bisection_steps(4, 5, integer=True, rtol=0.02) == 0  # neighbours already
    # log(2) / log(1.02) = 35.0: halved 6 times to within one tolerance
    assert bisection_steps(1.0, 2.0, integer=False, rtol=0.02) == 6
    assert bisection_steps(1.0, 1.01, integer=False, rtol=0.02) == 0
    assert bisection_steps(1, 64, integer=True, rtol=None) == 0


def test_cell_loads_share_the_first_midpoints():
    # 12 bisections of (32, 64): 1 + 2 + 4 + 8 + 12 loads, 31 integers inside
    assert cell_loads(32, 64, 12, integer=True, rtol=0.02) == 27
    assert cell_loads(1, 8, 12, integer=True, rtol=0.02) == 6  # the integers inside
    assert cell_loads(1, 8, 1, integer=True, rtol=0.02) == 3
    assert cell_loads(1, 8, 0, integer=True, rtol=0.02) == 0


@settings(max_examples=60, deadline=None)
@given(
    lo=st.floats(0.1, 50.0),
    ratio=st.floats(1.05, 64.0),
    where=st.floats(0.05, 0.95),
    half=st.floats(0.0, 0.3),
    integer=st.booleans(),
)
def test_the_bound_is_never_below_the_loads_simulated(lo, ratio, where, half, integer):
    a, b = (
        (float(math.floor(lo)) + 1, float(math.ceil(lo * ratio)) + 2)
        if integer
        else (lo, lo * ratio)
    )
    cross = a + where * (b - a)
    calls: list[float] = []
    curve = linear(1.0 + cross / (b - a), -1.0 / (b - a), half, calls)
    grid = [a, b]
    bound = refinement_bound(grid, [curve], integer=integer, rtol=0.02)
    calls.clear()
    find_crossings(grid, curve, integer=integer, rtol=0.02)
    between = {x for x in calls if x not in grid}
    assert len(between) <= bound
    assert bound <= 3 * bisection_steps(a, b, integer=integer, rtol=0.02)


def test_no_crossing_no_bisection():
    assert refinement_bound([1, 2, 4, 8], [linear(3.0, 0.0, 0.1)], integer=True) == 0
    assert refinement_bound([1, 8], [linear(2.0, -0.1, 0.1)], integer=True, rtol=None) == 0
