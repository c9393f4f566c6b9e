"""Intervals of the decision studies live in their quantity's domain.

Over two replications a Student-t interval is wide (t(0.975, 1) = 12.7): a level (tok/s, a
latency) is clipped at 0, a share to [0, 1], and a paired difference, which may have either
sign, is left as it is.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.studies.serving_points import PolicyPoint, difference, gain, level


def _point(**values: list[float]) -> PolicyPoint:
    return PolicyPoint({k: np.array(v) for k, v in values.items()}, np.array([1.0, 1.0]))


def test_a_level_interval_is_clipped_at_zero_and_a_difference_is_not() -> None:
    """TPOT 20 and 700 ms against 30 and 40 ms: the level's t interval (360 -+ 4320) is
    clipped at 0; the advantage of the second (lower is better) is +10 and -660 ms per
    replication, mean -325 with an interval that reaches below 0 and above 0."""
    a, b = _point(tpot_p99_ms=[20.0, 700.0]), _point(tpot_p99_ms=[30.0, 40.0])
    lv = level(a, "tpot_p99_ms")
    assert lv.mean == 360.0 and lv.ci95[0] == 0.0
    d = difference(a, b, "tpot_p99_ms")
    assert d.mean == pytest.approx(-325.0)
    assert d.ci95[0] < -325.0 < 0.0 < d.ci95[1]
    g = gain(a, b, "tpot_p99_ms")  # b / a: 1.5 and 0.057; a ratio is never negative
    assert g.ci95[0] == 0.0 < g.mean
