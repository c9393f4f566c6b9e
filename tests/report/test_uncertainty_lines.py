"""The answer line of a target: its rate and interval, or, when the shape would need a
first-position rate above 1, that it is not reachable under the shape."""

from sim.report.uncertainty import answer_line
from sim.uncertainty.answers import TargetUncertainty
from sim.uncertainty.interval import Interval


def _target(first_rate: float) -> TargetUncertainty:
    i = Interval(0.7, 1.0)
    return TargetUncertainty(150.0, 7, first_rate, 0.87, 0.91, i, i, i, (6, 9), (), None, ())


def test_a_capped_first_rate_is_not_an_answer() -> None:
    line = answer_line(_target(1.0))
    assert "150 tok/s: not reachable under this shape" in line
    assert "first-position rate of 1.000 and later rates above the shape's" in line
    assert "flat rates: 0.910" in line and "at its cap" not in line


def test_an_ordinary_first_rate_reads_plainly() -> None:
    line = answer_line(_target(0.93))
    assert "first-position rate 0.930 (90% interval" in line and "cap" not in line
