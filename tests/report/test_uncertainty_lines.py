"""The answer line of a target: its rate, interval and, at the cap, what the cap means."""

from sim.report.uncertainty import answer_line
from sim.studies.uncertainty import Interval, TargetUncertainty


def _target(first_rate: float) -> TargetUncertainty:
    i = Interval(0.7, 1.0)
    return TargetUncertainty(150.0, 7, first_rate, 0.87, 0.91, i, i, i, (6, 9), (), None, ())


def test_a_capped_first_rate_says_what_the_cap_means() -> None:
    line = answer_line(_target(1.0))
    assert "first-position rate 1.000 (at its cap" in line
    assert "mean 0.870 over the chain" in line


def test_an_ordinary_first_rate_reads_plainly() -> None:
    line = answer_line(_target(0.93))
    assert "first-position rate 0.930 (90% interval" in line and "cap" not in line
