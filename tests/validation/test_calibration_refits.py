"""The public curves' calibrations re-solved in a draw (sim/validation/calibration_refits.py):
at the nominal inputs the refit gives back the case's own fit, and under a drawn input
the refitted scenario reproduces the calibration figure the nominal fit no longer does."""

from __future__ import annotations

import pytest

from sim.scenario.overrides import with_overrides
from sim.validation import serving_data as pub
from sim.validation.calibration_refits import paper_refits
from sim.validation.eagle3_paper_cases import SGLANG_OVERHEAD_HIGH_MS, sglang_scenarios
from sim.validation.speedup_fit import _speedup_at

#: brentq's xtol on the fitted field (speedup_fit.fit_speedup): the tolerance of a refit.
XTOL = 1e-6


def test_the_paper_refits_reproduce_the_batch_2_speedups_under_a_draw() -> None:
    sg3, sg1 = sglang_scenarios()
    table = pub.EAGLE3_SGLANG_TABLE3
    refit3, refit1 = paper_refits(sg3, sg1, table, SGLANG_OVERHEAD_HIGH_MS)
    nominal = refit1({})
    assert nominal["timing.cycle_overhead_ms"] == pytest.approx(
        sg3.timing.cycle_overhead_ms, abs=XTOL
    )
    assert sg1.acceptance is not None
    assert nominal["acceptance.alpha"] == pytest.approx(sg1.acceptance.alpha, abs=XTOL)
    draw = {"hardware.bandwidth_efficiency": 0.55, "serving.kernel_slope": 0.3}
    held = with_overrides(sg3, draw, source="test")
    refitted = with_overrides(held, dict(refit3(draw)), source="test")
    # held at the nominal fit, the draw misses the calibration figure; refitted, it holds it
    assert abs(_speedup_at(held, 2) - table["EAGLE-3"][2]) > 0.02
    assert _speedup_at(refitted, 2) == pytest.approx(table["EAGLE-3"][2], abs=1e-4)
    eagle = with_overrides(sg1, {**draw, **refit1(draw)}, source="test")
    assert _speedup_at(eagle, 2) == pytest.approx(table["EAGLE"][2], abs=1e-4)
