"""Hand-worked checks of crossover: values computed from the formulas and their sources."""

from __future__ import annotations

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.crossover import MetricCurve


def test_a_gain_of_exactly_one_still_pays():
    """crossover.py MetricCurve.summary: 'pays' is gain >= 1 at every load (1.0 and 1.2 here)."""
    r = Ratio(1.0, None)
    curve = MetricCurve("per_user_tok_s", 2, (1.0, 2.0), (r, Ratio(1.2, None)), (r, r), (r, r), ())
    assert curve.summary() == "pays at every load simulated"
