"""Fisher or curve-clustered errors for the gains' parameters (sim/validation/gain_clustering.py,
``jackknife_gain_error``): the jackknife's formula, the variance ratio, the cluster sandwich,
and the bootstrap test on synthetic curves of known law, independent and clustered."""

import math

import numpy as np
import pytest

from sim.model.model_error import (
    GainErrorFit,
    Residual,
    fit_gain_error,
    gain_sigma,
    jackknife_gain_error,
)
from sim.validation.gain_clustering import (
    bootstrap_null,
    clustering_lines,
    covariance,
    sandwich,
    variance_ratio,
)
from tests.model.test_error_forms_shipped import LOADS, synthetic


def _sigma(d: float) -> float:
    return gain_sigma(0.13, 1.1, d)


def _clustered(rng: np.random.Generator, curves: int, spread: float) -> list[Residual]:
    """Curves each wrong by a scale of its own: r = sigma(d) exp(u_c) z_i, u_c ~ N(0,
    ``spread``^2) one a curve, z_i ~ N(0, 1) a figure; the figures of a curve share u_c."""
    out = []
    for c in range(curves):
        scale = math.exp(spread * rng.normal())
        for load in LOADS:
            d = math.log(load / 4)
            out.append(Residual(f"curve {c}", d, float(_sigma(d) * scale * rng.normal()), 0.0))
    return out


def _fit(a: float, d0: float, se_a: float = 0.0, se_d0: float = 0.0, rho: float = 0.0):
    return GainErrorFit(a, d0, se_a, se_d0, 10, 3, rho)


def test_the_jackknife_is_the_formula_over_the_held_out_fits():
    held = [_fit(0.10, 1.0), _fit(0.12, 1.4), _fit(0.14, 1.2)]
    j = jackknife_gain_error(_fit(0.12, 1.2, 9.0, 9.0, 0.9), held)
    # (n - 1) / n sum dev^2 with n = 3: a devs -0.02, 0, 0.02; d0 devs -0.2, 0.2, 0
    assert j.ceiling_stderr == pytest.approx(math.sqrt(2 / 3 * 0.0008))
    assert j.scale_stderr == pytest.approx(math.sqrt(2 / 3 * 0.08))
    assert j.correlation == pytest.approx(0.004 / math.sqrt(0.0008 * 0.08))
    assert (j.ceiling, j.scale, j.figures, j.groups) == (0.12, 1.2, 10, 3)
    with pytest.raises(ValueError, match=">= 2 groups"):
        jackknife_gain_error(_fit(0.12, 1.2), held[:1])


def test_the_variance_ratio_is_one_when_the_covariances_agree_and_scales_with_them():
    f = _fit(0.12, 1.2, 0.02, 0.4, 0.87)
    assert variance_ratio(f, f) == pytest.approx(1.0)
    assert variance_ratio(f, _fit(0.12, 1.2, 0.03, 0.6, 0.87)) == pytest.approx(2.25)
    # the same spreads with a weaker correlation leave the Fisher law's narrow axis wider
    assert variance_ratio(f, _fit(0.12, 1.2, 0.02, 0.4, 0.7)) > 1.5
    assert math.isnan(variance_ratio(_fit(0.12, 1.2, float("nan"), 0.4, 0.8), f))
    assert np.allclose(covariance(f), covariance(f).T)


def test_on_independent_figures_the_clustered_errors_agree_with_fisher():
    res = synthetic(np.random.default_rng(11), _sigma, 60, 0.01**2)
    fit = fit_gain_error(res)
    cr0 = sandwich(res, fit)
    assert 1 / 1.4 < cr0.ceiling_stderr / fit.ceiling_stderr < 1.4
    assert 1 / 1.4 < cr0.scale_stderr / fit.scale_stderr < 1.4


def test_on_clustered_figures_the_clustered_errors_exceed_fisher():
    """Each curve's errors scaled by its own factor exp(u_c), sd(u_c) 0.6 (8 figures a
    curve): the Fisher errors, which count 8 independent figures, are too narrow; the
    sandwich over curves sees it."""
    res = _clustered(np.random.default_rng(5), 40, 0.6)
    fit = fit_gain_error(res)
    cr0 = sandwich(res, fit)
    assert cr0.ceiling_stderr > 1.3 * fit.ceiling_stderr


@pytest.mark.slow
def test_the_bootstrap_test_rejects_clustered_curves_and_not_independent_ones():
    """p = (1 + #{T_b >= T}) / (B + 1) with B = 19: 0.05 only when every null data set is
    below the observed T."""
    clustered = clustering_lines(_clustered(np.random.default_rng(5), 20, 0.6), 19, 30)
    assert clustered[-1].endswith("kept: the law takes the jackknife's errors"), clustered
    independent = clustering_lines(synthetic(np.random.default_rng(11), _sigma, 20), 19, 30)
    assert independent[-1].endswith("not kept: Fisher stays"), independent


def test_the_null_draws_are_the_same_for_any_worker_count():
    res = synthetic(np.random.default_rng(3), _sigma, 6)
    fit = fit_gain_error(res)
    one = bootstrap_null(res, fit, 2, np.random.default_rng(30), workers=1)
    two = bootstrap_null(res, fit, 2, np.random.default_rng(30), workers=2)
    assert one == two and len(one) == 2
