"""Intervals of the decision studies live in their quantity's domain.

Over two replications a Student-t interval is wide (t(0.975, 1) = 12.7): a level (tok/s, a
latency) is clipped at 0, a share to [0, 1], and a paired difference, which may have either
sign, is left as it is.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.studies.serving.paired_metrics import (
    PolicyPoint,
    difference,
    gain,
    level,
    paired_difference,
)


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


def test_a_difference_of_rounding_noise_is_exact_zero_and_a_small_real_one_is_kept() -> None:
    """The same run reached by two routes differs by ~1e-14 from the order of its sums: its
    advantage is exactly 0 with the interval [0, 0] (printed '0 [0, 0]', not
    '-7.11e-15 [-2.78e-13, 2.64e-13]'); a real difference of 1e-4 on 52 tok/s stays."""
    x = [82.81, 82.79]
    noisy = [v * (1.0 + 3e-15) for v in x]
    d = difference(_point(per_user_tok_s=noisy), _point(per_user_tok_s=x), "per_user_tok_s")
    assert d.mean == 0.0 and d.ci95 == (0.0, 0.0)
    small = difference(
        _point(per_user_tok_s=[52.2201, 52.2202]),
        _point(per_user_tok_s=[52.22, 52.22]),
        "per_user_tok_s",
    )
    assert small.mean == pytest.approx(1.5e-4)


def test_paired_difference_per_phase_signs_latencies_and_zeroes_noise() -> None:
    """(R, phases) of a latency (lower is better): the advantage is reference - mine, and
    the phase equal up to 2e-15 relative (the controllers' k = 2 against the table that
    chose it, once '+2.31e-14') is exactly 0."""
    ref = np.array([[15.05, 20.0], [15.07, 22.0]])
    mine = np.array([[15.05 * (1 + 2e-15), 18.0], [15.07, 23.0]])
    assert paired_difference(mine, ref, higher_is_better=False).tolist() == [
        [0.0, 2.0],
        [0.0, -1.0],
    ]
