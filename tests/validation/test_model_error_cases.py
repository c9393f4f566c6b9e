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


def test_the_section_fits_the_selected_forms_and_flags_a_stale_default(monkeypatch):
    """The fit lines name the forms (levels s sqrt(d), gains a (1 - exp(-d / d0))) and
    compare with the shipped defaults at the digits shown: "differs" until the defaults
    are the fit, then "the same"."""
    import sim.validation.model_error_cases as mec
    from sim.model.model_error import (
        fit_gain_error,
        fit_level_error,
        jackknife_gain_error,
        leave_one_curve_out,
    )

    cases = [_case(c, {2: (1.0 + e, 1.0 - e / 2), 4: (1.0 - e, 1.0), 16: (1.0 + 2 * e, 1.0 + e),
                       64: (1.0 - 2 * e, 1.0 + e / 3)})
             for c, e in (("a", 0.05), ("b", 0.08), ("c", 0.12), ("d", 0.03))]  # fmt: skip
    figs = error_figures(cases)
    level = fit_level_error([f.residual() for f in figs if not f.gain])
    gain = fit_gain_error([f.residual() for f in figs if f.gain])
    monkeypatch.setattr(mec, "DEFAULT_LEVEL", 4.0)
    lines = model_error_lines(cases)
    (lv,) = [x for x in lines if x.startswith("- levels, s sqrt(d): ")]
    (gn,) = [x for x in lines if x.startswith("- gains, a (1 - exp(-d / d0)): ")]
    assert f"s = {level.level:.3f} ± {level.stderr:.3f}" in lv and "**differs" in lv
    assert f"a = {gain.ceiling:.3f}" in gn and f"d0 = {gain.scale:.2f}" in gn
    monkeypatch.setattr(mec, "DEFAULT_LEVEL", level.level)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_CEILING", gain.ceiling)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_SCALE", gain.scale)
    lines = model_error_lines(cases)
    # the gains' standard errors and correlation are shipped too (the answers' range)
    assert sum("(the same)" in x for x in lines) == 1
    assert f"correlation {gain.correlation:.2f} (" in lines[3]
    # the shipped errors are the jackknife's over curves, not Fisher's
    gains = [f.residual() for f in figs if f.gain]
    jack = jackknife_gain_error(gain, leave_one_curve_out(gains, fit_gain_error).values())
    assert f"jackknife over curves a ± {jack.ceiling_stderr:.3f}, d0 ± " in lines[3]
    monkeypatch.setattr(mec, "DEFAULT_GAIN_CEILING_STDERR", gain.ceiling_stderr)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_SCALE_STDERR", gain.scale_stderr)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_CORRELATION", gain.correlation)
    assert sum("(the same)" in x for x in model_error_lines(cases)) == 1
    monkeypatch.setattr(mec, "DEFAULT_GAIN_CEILING_STDERR", jack.ceiling_stderr)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_SCALE_STDERR", jack.scale_stderr)
    monkeypatch.setattr(mec, "DEFAULT_GAIN_CORRELATION", jack.correlation)
    lines = model_error_lines(cases)
    assert sum("(the same)" in x for x in lines) == 2
    # each curve's row carries the parameters fitted without it
    row_a = next(x for x in lines if x.startswith("| a | gains"))
    without_a = fit_gain_error([f.residual() for f in figs if f.gain and f.curve != "a"])
    assert row_a.endswith(f"| {without_a.ceiling:.3f}, {without_a.scale:.2f} |")
