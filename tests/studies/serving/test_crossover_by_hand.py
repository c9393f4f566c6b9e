"""Hand-worked checks of crossover: values computed from the formulas and their sources."""

from __future__ import annotations

import math

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.crossover_result import MetricCurve


def test_a_gain_of_exactly_one_still_pays():
    """crossover_result.py MetricCurve.summary: 'pays' is gain >= 1 at every load (1.0 and
    1.2 here)."""
    r = Ratio(1.0, None)
    curve = MetricCurve("per_user_tok_s", 2, (1.0, 2.0), (r, Ratio(1.2, None)), (r, r), (r, r), ())
    assert curve.summary() == "pays at every load simulated"


def test_a_cell_inside_the_model_error_band_may_stop_anywhere_in_the_bands_hull():
    """``within_range``: a band that holds 1 over the whole cell (8, 16) joins the draws'
    5-95% of the crossing (their hull: the 90% interval holds both); a band that covers
    only part of the cell says nothing (the crossing's own band then depends on where in
    the cell it falls), nor an open end more than that it is open."""
    from sim.studies.serving.crossover_intervals import within_range

    assert within_range((9.0, 12.0), (6.0, 20.0), 8.0, 16.0) == (6.0, 20.0)
    assert within_range((4.0, 12.0), (6.0, 20.0), 8.0, 16.0) == (4.0, 20.0)
    assert within_range((), (6.0, None), 8.0, 16.0) == (6.0, math.inf)
    assert within_range((9.0, 12.0), (10.0, 20.0), 8.0, 16.0) == (9.0, 12.0)
    assert within_range((), (10.0, 20.0), 8.0, 16.0) is None
