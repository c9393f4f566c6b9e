"""Hand-worked checks of calibrate: values computed from the formulas and their sources."""

from __future__ import annotations

import math

import pytest

from sim.calibration.importers.sglang_log import parse_sglang_log
from sim.calibration.importers.vllm_metrics import SpecDecodeCounters
from sim.calibration.measurements import sglang_measurement, vllm_measurement


def _line(al: float, gen: float) -> str:
    return (
        "[2025-06-01 10:01:11 TP0] Decode batch, #running-req: 1, #token: 845, token usage: 0.00, "
        f"accept len: {al:.2f}, accept rate: 0.50, cuda graph: True, gen throughput (token/s): "
        f"{gen:.2f}, #queue-req: 0,"
    )


def test_sglang_standard_errors_by_hand():
    """measurements.py: AL sigma = sd / sqrt(n) = sqrt(0.2 / 3) / 2; tok/s sigma = max(1% x 65,
    sqrt(500 / 3) / 2)."""
    log = parse_sglang_log(
        "\n".join(_line(a, g) for a, g in [(2.0, 50.0), (2.2, 60.0), (2.4, 70.0), (2.6, 80.0)])
    )
    m = sglang_measurement(log, 3, 0.01, default_num_steps=3)
    (obs,) = m.accept_lengths
    assert obs.accept_length == pytest.approx(2.3)
    assert obs.sigma == pytest.approx(math.sqrt(0.2 / 3) / 2)
    (point,) = m.points
    assert point.tok_s == pytest.approx(65.0)
    assert point.tok_s_sigma == pytest.approx(math.sqrt(500.0 / 3) / 2)


def test_vllm_accept_length_sigma_without_positions():
    """measurements.py: sqrt(k (AL - 1) / drafts) = sqrt(3 x 1.5 / 1000) for k = 3, AL = 2.5."""
    c = SpecDecodeCounters(1000.0, 3000.0, 1500.0, (), 1, "test")
    (obs,) = vllm_measurement(c).accept_lengths
    assert (obs.num_steps, obs.accept_length) == (3, pytest.approx(2.5))
    assert obs.sigma == pytest.approx(math.sqrt(3 * 1.5 / 1000.0))


def test_vllm_cumulative_sigma_is_floored_at_half_a_draft():
    """measurements.py: c = 1 has binomial sd 0, floored at 0.5 / drafts = 0.005; c = 0.5 gets
    sqrt(0.25 / 100)."""
    c = SpecDecodeCounters(100.0, 200.0, 150.0, (100.0, 50.0), 1, "test")
    obs = vllm_measurement(c).cumulative
    assert [o.rate for o in obs] == pytest.approx([1.0, 0.5])
    assert [o.sigma for o in obs] == pytest.approx([0.005, 0.05])
