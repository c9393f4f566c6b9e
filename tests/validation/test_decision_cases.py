"""Decision validation: the published crossover, and the scored case (slow)."""

from __future__ import annotations

import pytest

from sim.validation.decision_cases import published_crossover
from sim.validation.serving_data import EAGLE3_SGLANG_TABLE3, EAGLE3_VLLM_TABLE5


def test_published_crossovers():
    assert published_crossover(EAGLE3_SGLANG_TABLE3["EAGLE"]) == pytest.approx(16 + 0.02 / 0.09 * 8)
    assert published_crossover(EAGLE3_VLLM_TABLE5["EAGLE"]) == pytest.approx(24 + 0.03 / 0.10 * 8)
    assert published_crossover(EAGLE3_SGLANG_TABLE3["EAGLE-3"]) is None
    assert published_crossover({1: 0.9, 2: 1.2, 4: 0.8}) == pytest.approx(2 + 0.2 / 0.4 * 2)


@pytest.mark.slow
def test_decision_cases_are_built_and_never_score_a_calibration_figure():
    from sim.validation.decision_cases import decision_cases

    cases = decision_cases()
    assert len(cases) == 5
    for case in cases:
        assert any(n.startswith("Best of {off, k") for n in case.notes)
        assert not set(case.calibrated_on) & {r.figure for r in case.rows}
