"""The linear form of the model error, s d (sim/validation/linear_error.py): the fit
recovers a known s, and leave one curve out never uses the scored curve."""

import math

import numpy as np
import pytest

from sim.model.model_error import Z90, Residual, leave_one_curve_out
from sim.validation.linear_error import fit_model_error, model_error_sigma


def synthetic_curves(
    rng: np.random.Generator, s: float, curves: int, noise_var: float = 0.0
) -> list[Residual]:
    """Curves calibrated at 2 users and scored at 4..64: log errors N(0, v + (s d)^2)."""
    out = []
    for c in range(curves):
        for load in (4, 8, 16, 32, 64):
            d = math.log(load / 2)
            r = rng.normal(0.0, math.sqrt(noise_var + (s * d) ** 2))
            out.append(Residual(f"curve {c}", d, float(r), noise_var))
    return out


def test_fit_recovers_a_known_sigma_within_its_standard_error():
    rng = np.random.default_rng(20261205)
    truth = 0.08
    fit = fit_model_error(synthetic_curves(rng, truth, curves=40))
    assert fit.figures == 200 and fit.groups == 40
    # closed form: s / sqrt(2 n)
    assert fit.stderr == pytest.approx(fit.sigma_per_log_load / math.sqrt(400), rel=1e-9)
    assert abs(fit.sigma_per_log_load - truth) < 4 * fit.stderr


def test_fit_with_a_known_variance_takes_only_the_excess():
    rng = np.random.default_rng(7)
    truth, v = 0.06, 0.05**2
    fit = fit_model_error(synthetic_curves(rng, truth, curves=60, noise_var=v))
    assert abs(fit.sigma_per_log_load - truth) < 4 * fit.stderr
    # ignoring the known variance would put it in the term
    naive = fit_model_error(
        [Residual(x.group, x.distance, x.log_error) for x in synthetic_curves(
            np.random.default_rng(7), truth, curves=60, noise_var=v)]
    )  # fmt: skip
    assert naive.sigma_per_log_load > fit.sigma_per_log_load


def test_leave_one_curve_out_never_uses_the_scored_curve():
    res = [Residual("a", 1.0, 0.5), Residual("b", 1.0, 0.1), Residual("c", 2.0, -0.2)]
    loo = leave_one_curve_out(res, fit_model_error)
    assert loo["a"].sigma_per_log_load == pytest.approx(math.sqrt((0.1**2 + 0.1**2) / 2))
    assert loo["a"].groups == 2
    # a curve's own error moves only the others' terms
    moved = leave_one_curve_out([Residual("a", 1.0, 5.0), *res[1:]], fit_model_error)
    assert moved["a"] == loo["a"] and moved["b"] != loo["b"]


def test_figures_at_a_calibrated_load_do_not_identify_the_term():
    with pytest.raises(ValueError, match="not identified"):
        fit_model_error([Residual("a", 0.0, 0.1)])


def test_the_linear_sigma_is_s_times_the_distance():
    assert model_error_sigma(0.1, math.log(8)) == pytest.approx(0.1 * math.log(8))


@pytest.mark.slow
def test_leave_one_out_intervals_cover_about_90_percent():
    """Coverage bookkeeping: on synthetic curves with a known term, the leave-one-curve-out
    term's intervals hold ~90% of the figures (binomial 4 SE on 2000 figures)."""
    rng = np.random.default_rng(11)
    res = synthetic_curves(rng, 0.1, curves=400)
    loo = leave_one_curve_out(res, fit_model_error)
    inside = [
        abs(x.log_error) <= Z90 * model_error_sigma(loo[x.group].sigma_per_log_load, x.distance)
        for x in res
    ]
    n = len(inside)
    assert abs(np.mean(inside) - 0.9) < 4 * math.sqrt(0.9 * 0.1 / n)
