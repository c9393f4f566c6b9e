"""The model-error term scored on load curves: figures, derived gains, leave one curve out."""

import math

import pytest

from sim.validation.cases import Case, Row
from sim.validation.model_error_cases import error_figures, model_error_lines


def _case(title: str, errors: dict[int, tuple[float, float]]) -> Case:
    """A curve calibrated at 1 user, scored at each load: (speculative, plain) measured
    over predicted tok/s."""
    rows = []
    for load, (es, ep) in errors.items():
        for side, e in (("speculative", es), ("plain", ep)):
            rows.append(
                Row(
                    "aggregate tok/s",
                    f"{title} {side} {load}",
                    "-",
                    100.0 * e,
                    100.0,
                    0.0,
                    load=load,
                    calibrated_loads=(1.0,),
                    side=side,
                )
            )
    return Case(title, ("-",), (f"{title} 1",), tuple(rows))


def test_levels_and_the_ratio_of_two_published_levels():
    figs = error_figures([_case("a", {4: (1.2, 1.1)})])
    levels = [f for f in figs if not f.gain]
    (ratio,) = [f for f in figs if f.gain]
    assert len(levels) == 2
    assert ratio.measured == pytest.approx(1.2 / 1.1) and ratio.predicted == pytest.approx(1.0)
    assert ratio.distance == pytest.approx(math.log(4))


def test_coverage_is_scored_without_the_curve_itself():
    cases = [_case(c, {4: (1.0 + e, 1.0), 16: (1.0 - e, 1.0)}) for c, e in
             (("a", 0.05), ("b", 0.06), ("c", 0.5))]  # fmt: skip
    lines = model_error_lines(cases)
    row_c = next(x for x in lines if x.startswith("| c | levels"))
    # curve c's large errors are not inside the term fitted on a and b
    assert "| 4 | 2 (50%) | 2 (50%) |" in row_c
    row_a = next(x for x in lines if x.startswith("| a | levels"))
    assert "| 4 | 2 (50%) | 4 (100%) |" in row_a
