"""The gains' parameters as a law (sim/model/model_error.py ``GainParameterLaw``): the
predictive band integrates it on fixed nodes, the range is the band at its 90% ends."""

import math

import numpy as np
import pytest

from sim.model.model_error import (
    DEFAULT_GAIN_CEILING,
    DEFAULT_GAIN_LAW,
    DEFAULT_GAIN_SCALE,
    Z90,
    GainParameterLaw,
    fit_gain_error,
    gain_sigma,
)
from tests.model.test_error_forms_shipped import observed_covariance, synthetic

DISTANCES = (0.05, 0.3, math.log(2), 1.14, math.log(8), math.log(64), 10.0)


def test_without_parameter_uncertainty_the_band_is_the_point_fit():
    law = GainParameterLaw(0.128, 1.14, 0.0, 0.0, 0.0)
    for d in (0.0, *DISTANCES):
        assert law.predictive_sigma(d) == gain_sigma(0.128, 1.14, d)
        assert law.sigma_range(d) == (gain_sigma(0.128, 1.14, d),) * 2


def test_the_shipped_law_is_the_defaults_fisher_law():
    assert (DEFAULT_GAIN_LAW.ceiling, DEFAULT_GAIN_LAW.scale) == (
        DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE)  # fmt: skip
    assert 0 < DEFAULT_GAIN_LAW.log_ceiling_sd < 0.5 and 0 < DEFAULT_GAIN_LAW.log_scale_sd < 1


def test_with_d0_known_the_predictive_band_is_the_log_normal_mean():
    """ln a ~ N(ln a_hat, sd^2), d0 known: E[a^2] = a_hat^2 exp(2 sd^2), so the predictive
    sigma is the point's times exp(sd^2) at every d (the rule's 16 nodes integrate it to
    rounding), above the point."""
    law = GainParameterLaw(0.128, 1.14, 0.15, 0.0, 0.0)
    for d in DISTANCES:
        assert law.predictive_sigma(d) == pytest.approx(law.sigma(d) * math.exp(0.15**2), rel=1e-9)
        assert law.predictive_sigma(d) > law.sigma(d)


def test_independent_parameters_widen_the_band_and_the_shipped_correlation_can_narrow_it():
    """With a and d0 uncorrelated the predictive band is above the point at every d and
    grows as the law widens (sds x 0.5, 1, 2); with the shipped correlation (+0.71: a
    larger ceiling with a larger scale, ln sigma concave in ln d0) it is below the point
    between about 3x and 64x the calibrated load, and inside the 90% range everywhere."""
    sd_a, sd_d0 = DEFAULT_GAIN_LAW.log_ceiling_sd, DEFAULT_GAIN_LAW.log_scale_sd
    for d in DISTANCES:
        bands = [GainParameterLaw(DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, k * sd_a, k * sd_d0,
                                  0.0).predictive_sigma(d) for k in (0.5, 1.0, 2.0)]  # fmt: skip
        assert DEFAULT_GAIN_LAW.sigma(d) < bands[0] < bands[1] < bands[2]
        lo, hi = DEFAULT_GAIN_LAW.sigma_range(d)
        assert lo < DEFAULT_GAIN_LAW.predictive_sigma(d) < hi
    assert DEFAULT_GAIN_LAW.predictive_sigma(math.log(8)) < DEFAULT_GAIN_LAW.sigma(math.log(8))


def test_the_quadrature_matches_draws_of_the_law():
    """E[sigma_theta(d)^2] by the fixed Gauss-Hermite rule against 200 000 draws of
    (ln a, ln d0) (seeded): within 4 standard errors of the draws' mean."""
    law = GainParameterLaw(0.128, 1.14, 0.15, 0.37, -0.6)
    rng = np.random.default_rng(20261207)
    z = rng.standard_normal((200_000, 2))
    ln_a = math.log(law.ceiling) + law.log_ceiling_sd * z[:, 0]
    ln_d0 = math.log(law.scale) + law.log_scale_sd * (
        law.correlation * z[:, 0] + math.sqrt(1 - law.correlation**2) * z[:, 1])  # fmt: skip
    for d in DISTANCES:
        sq = (np.exp(ln_a) * -np.expm1(-d / np.exp(ln_d0))) ** 2
        se = sq.std(ddof=1) / math.sqrt(sq.size)
        assert law.predictive_sigma(d) ** 2 == pytest.approx(sq.mean(), abs=4 * se)


def test_the_range_ends():
    """With d0 known, ln sigma = ln a + const: the range is exact, sigma exp(+-Z90 sd);
    at d = 0 it is 0; with both uncertain the delta-method ends hold about 90% of the
    law's draws of sigma(d) (a small law, where the delta method is close: 4 SE)."""
    known = GainParameterLaw(0.128, 1.14, 0.15, 0.0, 0.0)
    lo, hi = known.sigma_range(math.log(8))
    point = known.sigma(math.log(8))
    assert (lo, hi) == pytest.approx((point * math.exp(-Z90 * 0.15), point * math.exp(Z90 * 0.15)))
    assert DEFAULT_GAIN_LAW.sigma_range(0.0) == (0.0, 0.0)
    law = GainParameterLaw(0.128, 1.14, 0.05, 0.1, -0.5)
    rng = np.random.default_rng(7)
    z = rng.standard_normal((100_000, 2))
    a = law.ceiling * np.exp(law.log_ceiling_sd * z[:, 0])
    d0 = law.scale * np.exp(law.log_scale_sd * (-0.5 * z[:, 0] + math.sqrt(0.75) * z[:, 1]))
    for d in (0.3, math.log(8)):
        lo, hi = law.sigma_range(d)
        sig = a * -np.expm1(-d / d0)
        share = float(np.mean((sig >= lo) & (sig <= hi)))
        assert share == pytest.approx(0.90, abs=4 * math.sqrt(0.09 / sig.size))


def test_the_fits_correlation_is_the_observed_informations():
    """The Fisher correlation of (a, d0) agrees with the observed information's (the
    likelihood's curvature at the fit) within 0.1 on 3200 synthetic figures, and the law
    carries it with the standard errors in logs (se / value)."""
    rng = np.random.default_rng(20261208)
    res = synthetic(rng, lambda d: gain_sigma(0.13, 1.1, d), 400, 0.01**2)
    fit = fit_gain_error(res)
    cov = observed_covariance(res, fit.ceiling, fit.scale)
    observed = cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1])
    assert -1 < fit.correlation < 1
    assert fit.correlation == pytest.approx(observed, abs=0.1)
    law = fit.law()
    assert law.log_ceiling_sd == pytest.approx(fit.ceiling_stderr / fit.ceiling)
    assert law.log_scale_sd == pytest.approx(fit.scale_stderr / fit.scale)
    assert law.correlation == fit.correlation
