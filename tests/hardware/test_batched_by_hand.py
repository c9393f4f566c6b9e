"""Hand-worked checks of batched: values computed from the formulas and their sources."""

from __future__ import annotations

import numpy as np
import pytest

from sim.hardware.batched import BatchedPass
from sim.hardware.compute_curve import ComputeCurve
from sim.scenario.load import load_scenario
from tests.conftest import ROOT, decode_physics

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"


def test_curve_below_its_first_point_keeps_the_first_segments_slope():
    """batched.py ComputeCurve.end_slopes: below r[0] the slope is (c1 - c0) / (r1 - r0) = 2, beyond
    r[-1] 0.5."""
    curve = ComputeCurve(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 4.0]))
    assert curve.end_slopes == (2.0, 0.5)
    np.testing.assert_allclose(curve.at(np.array([0.5, 5.0])), [0.0, 4.5])


def test_every_token_its_own_sequence_is_allowed():
    """batched.py _token_terms: 1 <= sequences <= tokens, so sequences == tokens (a decode batch) is
    valid."""
    bp = BatchedPass(
        decode_physics(load_scenario(LLAMA)), ComputeCurve(np.array([0.0]), np.array([0.0]))
    )
    assert float(bp.work_ms(4, 0.0, 0.0, sequences=4)) == pytest.approx(
        float(bp.work_ms(4, 0.0, 0.0))
    )
