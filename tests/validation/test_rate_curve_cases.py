"""The request-rate ladder case: calibrated on its lowest rate only."""

from __future__ import annotations

import pytest

from sim.calibration.tpot_model import predicted_tpot_ms
from sim.validation import serving_data as pub
from sim.validation.rate_curve_cases import (
    CALIBRATION_QPS,
    SCORED_QPS,
    _in_flight,
    _point,
    llmd_scenario,
)


def test_requests_decoding_follow_littles_law_on_the_stage_p50s():
    # 1 QPS baseline: 1 x (3.60 s latency - 0.167 s TTFT) = 3.433 requests decoding.
    assert _in_flight("baseline", 1) == pytest.approx(3.433)
    assert _in_flight("EAGLE-3", 1) == pytest.approx(2.34)


def test_calibrated_scenario_reproduces_the_lowest_rate_and_nothing_else_is_fitted():
    sc = llmd_scenario()
    points = [_point(arm, CALIBRATION_QPS) for arm in ("baseline", "EAGLE-3")]
    got = predicted_tpot_ms(sc, points)
    # brentq to 1e-6 on the field; the TPOT follows it to far better than 0.1%.
    assert got == pytest.approx([13.2, 9.7], rel=1e-3)
    assert CALIBRATION_QPS not in SCORED_QPS
    assert set(SCORED_QPS) | {CALIBRATION_QPS} == set(pub.LLMD_QWEN3_TPOT_P50_MS["baseline"])
