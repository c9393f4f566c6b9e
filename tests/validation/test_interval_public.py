"""The public curves' interval scoring (sim/validation/interval_public.py): which figures
are scored, and what it calls narrow enough to decide."""

from __future__ import annotations

import pytest

from sim.validation import rate_curve_cases as rc
from sim.validation.interval_public import KIMI, LLMD, Figure, figure_specs, summary_lines


def _figure(width: float, measured: float = 1.1, gain: bool = True) -> Figure:
    half = 1.1 * width / 2
    return Figure("c", "f", measured, 1.1, (1.1 - half, 1.1 + half), (), gain)


def test_an_interval_separates_a_10_percent_gain_below_a_width_of_0_18() -> None:
    """Around a 1.10 gain an interval of relative width w leaves out 1.0 when
    1.1 (1 - w / 2) > 1: w < 2 / 11 = 0.1818."""
    assert _figure(0.18).separates and not _figure(0.19).separates
    assert _figure(0.18).interval[0] > 1.0 > _figure(0.19).interval[0]


def test_the_summary_scores_the_gains_apart() -> None:
    figures = [_figure(0.1), _figure(0.3, measured=2.0), _figure(0.05, gain=False)]
    lines = summary_lines(figures)
    assert "| all | 3 | 2 (67%) | 0.100 | |" in lines
    gains = lines[
        lines.index("| gains of | figures | inside | median width (rel.) | separate 10% |") :
    ]
    assert gains[-1] == "| all | 2 | 1 (50%) | 0.200 | 1 |"


def test_no_calibration_figure_is_scored() -> None:
    """Each curve is calibrated on its lowest load (the paper tables on batch 2, Kimi on
    batch 1 and plain decoding at 8 users, llm-d on 1 QPS): none of those is a figure."""
    specs = figure_specs()
    paper = [s for s in specs if s.curve not in (KIMI, LLMD)]
    assert all(dict(s.load)["concurrency"] != 2 for s in paper)
    kimi = [s for s in specs if s.curve == KIMI]
    assert all(dict(s.load)["concurrency"] != 1 for s in kimi)
    at8 = [f[0] for s in kimi if dict(s.load)["concurrency"] == 8 for f in s.figures + s.gains]
    assert at8 == ["MTP=3 conc=8"]
    llmd = [dict(s.load)["rate_per_s"] for s in specs if s.curve == LLMD]
    assert llmd == [float(q) for q in rc.SCORED_QPS] and rc.CALIBRATION_QPS not in llmd
    assert all(s.refit is not None for s in specs)


def test_the_model_error_term_of_a_curve_is_fitted_without_it() -> None:
    """A curve's interval takes the term fitted on the other curves: its own miss moves
    only theirs; a figure at a calibrated load (distance 0) keeps its inputs' interval."""
    import math

    from sim.model.model_error import Z90
    from sim.validation.interval_public import loo_terms, with_model_error

    def fig(curve: str, measured: float, distance: float) -> Figure:
        """A level predicted 1.0 (the levels' term: s sqrt(d))."""
        return Figure(curve, "f", measured, 1.0, (0.99, 1.01), (), False, True, distance)

    figs = [fig("a", 1.1, 1.0), fig("b", 0.9, 4.0), fig("c", 3.0, 1.0), fig("c", 1.0, 0.0)]
    terms = loo_terms(figs[:3])
    # s^2 = mean(r^2 / d) over a's and b's figures only
    s_c = math.sqrt((math.log(1.1) ** 2 / 1.0 + math.log(0.9) ** 2 / 4.0) / 2)
    assert terms["c"].sigma(1.0) == pytest.approx(s_c)
    out = with_model_error(figs)
    assert out[2].interval[1] == pytest.approx(math.exp(Z90 * s_c)) and not out[2].inside
    assert out[3].interval == figs[3].interval


def test_a_gain_counts_its_distance_from_the_loads_that_calibrate_both_arms() -> None:
    """Kimi's plain decoding is measured at 1 and 8 users, its speculative arm at 1 only:
    at 32 users plain decoding's level is ln 4 from a calibrated load, the speculative
    level and the gain ln 32."""
    import math

    from sim.simulation.serving.setup import BASELINE, SPECULATIVE
    from sim.validation.interval_public import SPEEDUP

    (at32,) = [s for s in figure_specs() if s.curve == KIMI and dict(s.load)["concurrency"] == 32]
    assert at32.distance(BASELINE) == pytest.approx(math.log(4))
    assert at32.distance(SPECULATIVE) == pytest.approx(math.log(32))
    assert at32.distance(SPEEDUP) == pytest.approx(math.log(32))
