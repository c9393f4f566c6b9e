"""The shipped model-error forms: levels s sqrt(d), gains a (1 - exp(-d / d0)); their
closed values, and maximum-likelihood fits that recover known parameters."""

import math

import numpy as np
import pytest

from sim.model.model_error import (
    DEFAULT_GAIN_CEILING,
    DEFAULT_GAIN_SCALE,
    DEFAULT_LEVEL,
    Residual,
    fit_gain_error,
    fit_level_error,
    gain_sigma,
    leave_one_curve_out,
    level_sigma,
)

#: Calibrated at 4 users, scored from 5 to 128: distances 0.22 to 3.47, both sides of d0.
LOADS = (5, 6, 8, 12, 16, 32, 64, 128)


def synthetic(
    rng: np.random.Generator, sigma, curves: int, noise_var: float = 0.0
) -> list[Residual]:
    """Curves calibrated at 4 users: log errors N(0, v + sigma(d)^2) at ``LOADS``."""
    out = []
    for c in range(curves):
        for load in LOADS:
            d = math.log(load / 4)
            r = rng.normal(0.0, math.sqrt(noise_var + sigma(d) ** 2))
            out.append(Residual(f"curve {c}", d, float(r), noise_var))
    return out


def test_closed_values_of_the_forms():
    assert level_sigma(0.073, 0.0) == 0.0
    assert level_sigma(0.073, 1.0) == pytest.approx(0.073)
    assert level_sigma(0.073, math.log(8)) == pytest.approx(0.073 * 1.4420, rel=1e-4)
    assert level_sigma(0.1, 4.0) == pytest.approx(0.2)
    assert gain_sigma(0.128, 1.14, 0.0) == 0.0
    # at d = d0: a (1 - 1/e); far away: the ceiling a
    assert gain_sigma(0.128, 1.14, 1.14) == pytest.approx(0.128 * (1 - math.exp(-1)))
    assert gain_sigma(0.128, 1.14, math.log(2)) == pytest.approx(0.058314, rel=1e-4)
    assert gain_sigma(0.128, 1.14, 100.0) == pytest.approx(0.128)
    # near 0 the gains' form is linear with slope a / d0
    assert gain_sigma(0.128, 1.14, 1e-6) == pytest.approx(0.128 / 1.14 * 1e-6, rel=1e-5)


def test_the_defaults_are_in_the_fitted_range():
    """The shipped defaults (the fit on all public curves, docs/validation.md) give the
    bands docs/serving-intervals.md quotes at 8x a measured batch."""
    assert math.exp(1.6448536 * level_sigma(DEFAULT_LEVEL, math.log(8))) == pytest.approx(
        1.19, abs=0.005
    )
    assert DEFAULT_GAIN_CEILING > 0 and DEFAULT_GAIN_SCALE > 0


def test_level_fit_is_closed_without_a_known_variance():
    rng = np.random.default_rng(20261207)
    truth = 0.07
    res = synthetic(rng, lambda d: level_sigma(truth, d), curves=50)
    fit = fit_level_error(res)
    r = np.array([x.log_error for x in res])
    d = np.array([x.distance for x in res])
    assert fit.level == pytest.approx(math.sqrt(np.mean(r**2 / d)), rel=1e-12)
    assert fit.figures == 400 and fit.groups == 50
    assert fit.stderr == pytest.approx(fit.level / math.sqrt(2 * 400), rel=1e-9)
    assert abs(fit.level - truth) < 4 * fit.stderr


def test_level_fit_with_a_known_variance_recovers_the_excess():
    rng = np.random.default_rng(31)
    truth, v = 0.07, 0.04**2
    fit = fit_level_error(synthetic(rng, lambda d: level_sigma(truth, d), 80, v))
    assert abs(fit.level - truth) < 4 * fit.stderr
    naive = fit_level_error(
        [Residual(x.group, x.distance, x.log_error)
         for x in synthetic(np.random.default_rng(31), lambda d: level_sigma(truth, d), 80, v)]
    )  # fmt: skip
    assert naive.level > fit.level


def test_gain_fit_recovers_the_ceiling_and_scale_within_their_standard_errors():
    rng = np.random.default_rng(20261208)
    a, d0 = 0.13, 1.1
    res = synthetic(rng, lambda d: gain_sigma(a, d0, d), 400, 0.01**2)
    fit = fit_gain_error(res)
    assert fit.figures == 3200 and fit.groups == 400
    assert 0 < fit.ceiling_stderr < 0.05 and 0 < fit.scale_stderr < 1.0
    assert abs(fit.ceiling - a) < 4 * fit.ceiling_stderr
    assert abs(fit.scale - d0) < 4 * fit.scale_stderr
    assert fit.sigma(2.0) == pytest.approx(gain_sigma(fit.ceiling, fit.scale, 2.0))
    # the Fisher (expected) standard errors agree with the observed information's, the
    # likelihood's curvature at the fit by central differences: they differ by O(1/sqrt(n))
    # (3200 figures) and the differences' truncation, within 10%
    assert np.sqrt(np.diag(observed_covariance(res, fit.ceiling, fit.scale))) == pytest.approx(
        [fit.ceiling_stderr, fit.scale_stderr], rel=0.1
    )


def observed_covariance(res: list[Residual], a: float, d0: float) -> np.ndarray:
    """The inverse Hessian of the gains' negative log likelihood at (a, d0), (2, 2)."""
    r = np.array([x.log_error for x in res])
    d = np.array([x.distance for x in res])
    v = np.array([x.variance for x in res])

    def nll(t: np.ndarray) -> float:
        var = v + (t[0] * -np.expm1(-d / t[1])) ** 2
        return 0.5 * float(np.sum(np.log(var) + r**2 / var))

    t, h = np.array([a, d0]), np.array([1e-4, 1e-3])
    hess = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h[i], np.eye(2)[j] * h[j]
            hess[i, j] = (nll(t + ei + ej) - nll(t + ei - ej) - nll(t - ei + ej)
                          + nll(t - ei - ej)) / (4 * h[i] * h[j])  # fmt: skip
    return np.linalg.inv(hess)


def test_leave_one_curve_out_never_uses_the_scored_curve():
    rng = np.random.default_rng(5)
    res = synthetic(rng, lambda d: gain_sigma(0.13, 1.1, d), 6)
    loo = leave_one_curve_out(res, fit_gain_error)
    assert loo["curve 0"] == fit_gain_error([x for x in res if x.group != "curve 0"])
    moved = [Residual(x.group, x.distance, 5.0 * x.log_error) if x.group == "curve 0" else x
             for x in res]  # fmt: skip
    again = leave_one_curve_out(moved, fit_gain_error)
    assert again["curve 0"] == loo["curve 0"] and again["curve 1"] != loo["curve 1"]
    levels = leave_one_curve_out(res, fit_level_error)
    assert levels["curve 2"].groups == 5


def test_figures_at_a_calibrated_load_identify_neither_form():
    for fit in (fit_level_error, fit_gain_error):
        with pytest.raises(ValueError, match="not identified"):
            fit([Residual("a", 0.0, 0.1)])
