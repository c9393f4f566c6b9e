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
    _hermite,
    beta_quantiles,
    quantile_table,
)
from tests.model.beta_quantile_reference import reference_quantile_table


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
@example(mean=0.427, concentration=232.015625)  # a piece's error 5.0e-11, at the threshold
@example(mean=0.08219248938332287, concentration=0.3)
@settings(max_examples=40, deadline=None)
def test_forward_checks_build_the_table_inverse_checks_built(mean, concentration):
    """Checking a piece through betainc (forwards) splits the pieces that checking through
    betaincinv did: the same nodes, values and slopes, bit for bit, for the seed's class.
    The two checks round differently, so a piece whose error lies at the split threshold
    (half the tolerance) can be split by one and kept by the other; where the tables
    differ, the forward one still meets the tolerance against betaincinv everywhere."""
    a, b = mean * concentration, (1 - mean) * concentration
    new, old = quantile_table.__wrapped__(a, b), reference_quantile_table(a, b)
    assert (new is None) == (old is None)
    if new is None or all(np.array_equal(n, o) for n, o in zip(new, old, strict=True)):
        return
    assert (mean, concentration) != (0.6050964941644925, 5.0)  # the seed: bit for bit
    assert abs(new[0].size - old[0].size) <= 2  # borderline pieces only
    nodes, x, d = new
    u = np.linspace(nodes[0], nodes[-1], 200_001)
    i = np.clip(np.searchsorted(nodes, u, side="right") - 1, 0, nodes.size - 2)
    got = _hermite(u, nodes[i], nodes[i + 1], x[i], x[i + 1], d[:, i], d[:, i + 1])
    assert np.abs(got - special.betaincinv(a, b, u)).max() <= TOLERANCE


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
