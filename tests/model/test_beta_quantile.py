"""The tabled Beta quantile stays within its tolerance of scipy's betaincinv."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import special

from sim.model.acceptance import RateClass, Spread
from sim.model.beta_quantile import (
    DIRECT_BELOW,
    TOLERANCE,
    U_MIN,
    _density,
    _derivatives,
    _hermite,
    _polished,
    _subdivisions,
    beta_quantiles,
    quantile_table,
)


@given(mean=st.floats(0.02, 0.98), concentration=st.floats(0.3, 300.0))
@example(mean=0.123046875, concentration=0.3)  # erred by 3.6e-10 with midpoint checks only
@settings(max_examples=30, deadline=None)
def test_within_tolerance_everywhere(mean, concentration):
    a, b = mean * concentration, (1 - mean) * concentration
    u = np.concatenate([np.linspace(0, 1, 20001), 10.0 ** -np.arange(1, 15)])
    got = beta_quantiles(a, b, u)
    exact = special.betaincinv(a, b, u)
    ok = np.isfinite(exact)
    assert np.abs(got[ok] - exact[ok]).max() <= TOLERANCE * 1.5
    table = quantile_table(a, b)
    if table is not None:
        assert table[0][0] == U_MIN and np.all(np.diff(table[1]) > 0)


def test_a_class_builds_each_betas_table_once_and_keeps_it_to_itself():
    """Sampling keeps the tables it builds on the rate class (the bound model), one per
    Beta of its positions, and reuses them for later blocks: the same rates as a table
    built afresh, bit for bit. Another class (other means) starts with none; nothing is
    kept between calls without a class."""
    cls = RateClass("chat", 1.0, np.array([0.618, 0.618, 0.5]), Spread(concentration=5.0))
    u = np.random.default_rng(4).random((2, 1000))
    first = cls.rates_from_uniform(u[0], sampling=True)
    assert len(cls._tables) == 2  # two distinct (mean, concentration) pairs
    kept = dict(cls._tables)
    second = cls.rates_from_uniform(u[1], sampling=True)
    assert all(cls._tables[key] is table for key, table in kept.items())
    for key in kept:
        assert np.array_equal(beta_quantiles(*key, u[1]), beta_quantiles(*key, u[1], {}))
    assert np.array_equal(second[:, 2], beta_quantiles(2.5, 2.5, u[1]))
    assert np.array_equal(first[:, 0], first[:, 1])
    assert cls.with_means(np.array([0.65, 0.65, 0.55]))._tables == {}


def test_small_calls_are_exact():
    u = np.random.default_rng(1).random(DIRECT_BELOW - 1)
    assert np.array_equal(beta_quantiles(3.09, 1.91, u), special.betaincinv(3.09, 1.91, u))


def test_sampled_rates_follow_the_exact_quantile():
    """Sampling uses the table; the theory's quadrature keeps betaincinv; both agree."""
    cls = RateClass("chat", 1.0, np.array([0.618, 0.618, 0.5]), Spread(concentration=5.0))
    u = np.random.default_rng(2).random(4000)
    sampled = cls.rates_from_uniform(u, sampling=True)
    exact = cls.rates_from_uniform(u)
    assert np.abs(sampled - exact).max() <= TOLERANCE * 1.5
    # higher means at the same uniforms: rates rise (common random numbers, to tolerance)
    higher = cls.with_means(np.array([0.65, 0.65, 0.55])).rates_from_uniform(u, sampling=True)
    assert np.all(higher >= sampled - 2 * TOLERANCE)


@given(mean=st.floats(0.02, 0.98), concentration=st.floats(0.3, 300.0))
@example(mean=0.6050964941644925, concentration=5.0)  # the seed's Beta(5) class
@example(mean=0.123046875, concentration=0.3)
@example(mean=0.427, concentration=232.015625)
@example(mean=0.08219248938332287, concentration=0.3)
@settings(max_examples=40, deadline=None)
def test_nodes_hold_the_exact_quantile_and_its_derivatives(mean, concentration):
    """Nodes added by Halley polishing hold betaincinv's quantile to a few ulps, and every
    node carries the closed-form derivatives of that quantile."""
    a, b = mean * concentration, (1 - mean) * concentration
    table = quantile_table(a, b)
    if table is None:
        return
    u, x, d = table
    exact = special.betaincinv(a, b, u)
    assert np.all(np.abs(x - exact) <= 1e-12 * exact + 1e-300)
    assert np.array_equal(d, _derivatives(a, b, float(special.betaln(a, b)), x))


def _slopes(p: np.polynomial.Polynomial, at: float) -> np.ndarray:
    return np.array([p.deriv(k)(at) for k in (1, 2, 3)])


def test_the_septic_hermite_piece_is_exact_on_degree_seven():
    """Four conditions an end determine every polynomial of degree 7: the basis is right."""
    p = np.polynomial.Polynomial(np.random.default_rng(3).normal(size=8))
    u0, u1 = 0.2, 0.45
    u = np.linspace(u0, u1, 41)
    got = _hermite(u, u0, u1, p(u0), p(u1), _slopes(p, u0), _slopes(p, u1))
    assert np.abs(got - p(u)).max() <= 1e-13
    # degree 8 with leading coefficient c: the error is exactly c h^8 t^4 (1 - t)^4
    q = p * np.polynomial.Polynomial([0.0, 1.0])
    off = _hermite(u, u0, u1, q(u0), q(u1), _slopes(q, u0), _slopes(q, u1))
    t = (u - u0) / (u1 - u0)
    law = q.coef[-1] * (u1 - u0) ** 8 * t**4 * (1 - t) ** 4
    assert np.abs(q(u) - off - law).max() <= 1e-13 < np.abs(law).max()


def test_derivatives_of_a_closed_form_quantile():
    """Beta(2, 1): F(x) = x^2 and the quantile is sqrt(u), whose first three derivatives
    are u^-1/2 / 2, -u^-3/2 / 4 and 3 u^-5/2 / 8."""
    u = np.array([0.01, 0.3, 0.81])
    got = _derivatives(2.0, 1.0, float(special.betaln(2.0, 1.0)), np.sqrt(u))
    want = np.stack([0.5 * u**-0.5, -0.25 * u**-1.5, 0.375 * u**-2.5])
    assert np.allclose(got, want, rtol=1e-13)


def test_a_failed_piece_is_cut_by_the_eighth_root_of_its_error():
    """n pieces of a septic piece err about err / n^8: aimed at a quarter of the tolerance,
    at least 2 and at most 8 pieces (an infinite or NaN error: 8)."""
    aim = 0.25 * TOLERANCE
    err = np.array([TOLERANCE, aim * 3.0**8, aim * 3.0**8 * 1.01, 1.0, np.inf, np.nan])
    assert _subdivisions(err).tolist() == [2, 3, 4, 8, 8, 8]


def test_polishing_converges_or_falls_back_to_the_inverse():
    """Halley's steps from a start 1e-3 off reach betaincinv's quantile; a start that leaves
    (0, 1) on its first step is inverted directly; both to a few ulps."""
    a, b = 58.2, 25.4
    log_beta = float(special.betaln(a, b))
    u = np.array([0.001, 0.2, 0.5, 0.9, 0.999])
    exact = special.betaincinv(a, b, u)
    assert np.allclose(_polished(a, b, log_beta, u, exact + 1e-3), exact, rtol=1e-13, atol=0)
    far = _polished(a, b, log_beta, u, np.full(u.shape, 1e-9))
    assert np.allclose(far, exact, rtol=1e-13, atol=0)


def test_a_typical_table_is_small():
    """What septic pieces and error-sized cuts buy: the seed's Beta(5) class needs at most
    100 nodes (quintic pieces split at their midpoints needed 172)."""
    a = 0.6050964941644925 * 5.0
    table = quantile_table(a, 5.0 - a)
    assert table is not None and table[0].size <= 100


def test_the_forward_error_is_the_inverse_error():
    """(I_x^ - u) / f(x^) is x^ - x(u) to a relative 1e-6 wherever the error is resolvable."""
    a, b = 3.0, 2.0
    u = np.linspace(0.01, 0.99, 999)
    exact = special.betaincinv(a, b, u)
    for shift in (1e-10, 1e-8, -3e-9):
        x_hat = exact + shift
        forward = (special.betainc(a, b, x_hat) - u) / _density(
            a, b, float(special.betaln(a, b)), x_hat
        )
        assert np.allclose(forward, shift, rtol=1e-6, atol=1e-14)
    assert _density(a, b, float(special.betaln(a, b)), np.array([0.0, 1.0, 1.5])).tolist() == [
        0.0,
        0.0,
        0.0,
    ]
