"""The coverage study of the serving intervals (sim/validation/interval_coverage.py): a
truth drawn from the model's own ranges, measured, calibrated on its lowest load, scored."""

from __future__ import annotations

import pytest

from sim.scenario.load import load_scenario
from sim.validation.interval_coverage import (
    LOADS,
    SCENARIO,
    SETTINGS,
    score_truth,
    summary_lines,
    truth_inputs,
)


def test_a_truth_draws_every_term_a_batch1_calibration_leaves_open():
    fields = [u.field for u in truth_inputs(load_scenario(SCENARIO, SETTINGS))]
    assert {"serving.host_us_per_request", "serving.kernel_slope"} <= set(fields)
    assert "serving.expert_skew" not in fields  # a dense target


@pytest.mark.slow
def test_one_truth_is_scored_at_every_load_but_the_lowest():
    sc = load_scenario(SCENARIO, SETTINGS)
    rows = score_truth(sc, 0, draws=4)
    assert [r.users for r in rows] == list(LOADS[1:])
    for r in rows:
        for what in ("speedup", "speculative", "baseline"):
            lo, hi = r.interval[what]
            assert lo <= r.nominal[what] <= hi and r.width(what) > 0
    assert score_truth(sc, 0, draws=4) == rows  # fixed seeds: the same study
    assert len(summary_lines(rows)) == 2 + 3 * len(LOADS)
