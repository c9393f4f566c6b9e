"""The Monte Carlo standard error read from a 95% Student-t interval.

Tolerance rel 1e-12: the t quantile is computed to a few ulps (scipy's inversion, and at
1 and 2 degrees of freedom closed forms of a few double operations), so agreement is near
1e-15; 1e-12 leaves that margin a thousandfold while the normal quantile (2.2 times too
large at R = 3) or one degree of freedom too many (t(0.975, 3) / t(0.975, 2) = 0.74) lies
far outside it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sim.simulation.serving.metrics import mean_interval
from sim.validation.monte_carlo import sd_from_ci95

REL = 1e-12


@pytest.mark.parametrize("replications", [2, 3, 10])
def test_against_scipy_t_quantile(replications: int) -> None:
    q = float(stats.t.ppf(0.975, replications - 1))
    mean, se = 812.5, 3.25
    got = sd_from_ci95((mean - q * se, mean + q * se), replications)
    assert got == pytest.approx(se, rel=REL)


@pytest.mark.parametrize(
    ("replications", "quantile"),
    [
        # 1 degree of freedom (Cauchy): t(p) = tan(pi (p - 1/2))
        (2, math.tan(math.pi * 0.475)),
        # 2 degrees of freedom: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t = a sqrt(2 / (1 - a^2))
        # with a = 2 p - 1
        (3, 0.95 * math.sqrt(2.0 / (1.0 - 0.95**2))),
    ],
)
def test_against_closed_form_quantiles(replications: int, quantile: float) -> None:
    assert sd_from_ci95((10.0, 10.0 + 2.0 * quantile), replications) == pytest.approx(1.0, rel=REL)


@pytest.mark.parametrize("replications", [2, 3, 10])
def test_inverts_the_serving_interval(replications: int) -> None:
    """The interval the serving summary builds (``mean_interval``) gives back the standard
    error of the replication means, s / sqrt(R)."""
    x = np.random.default_rng(7).normal(1000.0, 25.0, size=replications)
    _, ci = mean_interval(x)
    expected = float(x.std(ddof=1) / np.sqrt(replications))
    assert sd_from_ci95(ci, replications) == pytest.approx(expected, rel=REL)


def test_no_interval_is_no_error() -> None:
    assert sd_from_ci95(None, 3) == 0.0
    assert sd_from_ci95((None, 4.0), 3) == 0.0
    assert sd_from_ci95((1.0, None), 3) == 0.0


def test_one_replication_has_no_interval() -> None:
    with pytest.raises(ValueError, match="at least 2 replications"):
        sd_from_ci95((1.0, 2.0), 1)
