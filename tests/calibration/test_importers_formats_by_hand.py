"""Hand-worked checks of importers formats: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.calibration.importers.vllm_metrics import read_vllm_latency

FAMILY = "vllm:inter_token_latency_seconds"


def test_latency_between_two_scrapes_is_the_difference_of_sum_over_count(tmp_path):
    """vllm_metrics.py read_vllm_latency: (10 - 4) s / (1000 - 400) steps = 10 ms a step."""
    before = tmp_path / "before.txt"
    after = tmp_path / "after.txt"
    before.write_text(f"{FAMILY}_sum 4.0\n{FAMILY}_count 400.0\n")
    after.write_text(f"{FAMILY}_sum 10.0\n{FAMILY}_count 1000.0\n")
    lat = read_vllm_latency(after, before)
    assert lat.step is not None
    assert (lat.step.total_s, lat.step.count) == pytest.approx((6.0, 600.0))
    assert lat.step.mean_ms == pytest.approx(10.0)
