"""Hand-worked checks of importers vllm: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.calibration.importers.vllm_metrics import SpecDecodeCounters


def _counters(drafts, draft_tokens, accepted, per_pos):
    return SpecDecodeCounters(drafts, draft_tokens, accepted, per_pos, 1, "test")


def test_position_no_draft_reached_gets_rate_zero():
    """vllm_metrics.py conditional: c = (0.5, 0, 0); a_3 has c_2 = 0 and is 0, as in
    sim/model/metrics.py."""
    c = _counters(10.0, 30.0, 5.0, (5.0, 0.0, 0.0))
    assert c.conditional == pytest.approx((0.5, 0.0, 0.0))


def test_spec_tokens_rounds_to_the_nearest_k():
    """vllm_metrics.py num_spec_tokens: round(draft tokens / drafts); 2990 / 1000 (mid-update) is k
    = 3."""
    assert _counters(1000.0, 2990.0, 1500.0, ()).num_spec_tokens == 3
