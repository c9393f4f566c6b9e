"""The gains' parameters as a range, the study (sim/validation/gain_range.py): the
profile likelihood of d0 and the jackknife over curves on synthetic curves of known law."""

import math

import numpy as np
import pytest

from sim.model.model_error import (
    fit_gain_error,
    gain_sigma,
    jackknife_gain_error,
    leave_one_curve_out,
)
from sim.validation.gain_range import curve_jackknife, profile_scale, score_bands
from tests.model.test_error_forms_shipped import synthetic


def _curves(n: int = 60):
    return synthetic(np.random.default_rng(11), lambda d: gain_sigma(0.13, 1.1, d), n, 0.01**2)


def test_the_profile_of_d0_is_lowest_at_the_fit_and_its_interval_holds_it():
    res = _curves()
    fit = fit_gain_error(res)
    grid = list(np.exp(np.linspace(math.log(0.2), math.log(20.0), 401)))
    rel, (lo, hi) = profile_scale(res, grid)
    nearest = int(np.argmin([abs(math.log(g / fit.scale)) for g in grid]))
    assert rel[nearest] < 0.01 and min(rel) == 0.0
    assert lo is not None and hi is not None and lo < fit.scale < hi
    # the Fisher normal law's 90% interval is of the same size (independent figures)
    assert 0.6 < (hi - lo) / (2 * 1.645 * fit.scale_stderr) < 1.6
    # a grid inside the interval leaves both ends open
    assert profile_scale(res, [fit.scale * 0.99, fit.scale, fit.scale * 1.01])[1] == (None, None)


@pytest.mark.slow
def test_the_curve_jackknife_agrees_with_fisher_when_the_figures_are_independent():
    """Independent figures: the jackknife over 60 curves estimates the same standard
    errors as the Fisher information, within the jackknife's own spread (a factor 1.6).
    Slow (60 refits); the study's jackknife runs fast in the test below, and the formula's
    own tests are in tests/validation/test_gain_clustering.py."""
    res = _curves()
    fit = fit_gain_error(res)
    se_a, se_d0, rho = curve_jackknife(res)
    assert 1 / 1.6 < se_a / fit.ceiling_stderr < 1.6
    assert 1 / 1.6 < se_d0 / fit.scale_stderr < 1.6
    assert -1 <= rho <= 1


def test_the_curve_jackknife_is_the_jackknife_of_the_leave_one_curve_out_fits():
    """The study's (se of a, se of d0, correlation) in that order, on 12 curves."""
    res = _curves(12)
    jack = jackknife_gain_error(
        fit_gain_error(res), leave_one_curve_out(res, fit_gain_error).values()
    )
    got = curve_jackknife(res)
    assert got == (jack.ceiling_stderr, jack.scale_stderr, jack.correlation)
    assert got[0] > 0 and got[1] > 0 and -1 <= got[2] <= 1


def test_the_bands_are_scored_on_every_figure():
    res = _curves(12)
    point, predictive = score_bands(res)
    assert point.figures == predictive.figures == len(res)
    assert 0 <= point.inside <= len(res) and math.isfinite(point.log_score)
