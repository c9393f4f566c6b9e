"""Acceptance shapes by position: factors, anchors, continuation, vectorized solves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.closed_forms import alpha_for_accept_length, leviathan_accept_length
from sim.model.shapes import (
    accept_length_of,
    accept_lengths_by_k,
    continue_rates,
    first_rate_for_accept_length,
    numpy_sum,
    rates_for_positions,
    scale_for_accept_length,
    shape_factors,
)


def test_factors_of_each_shape() -> None:
    assert np.array_equal(shape_factors("flat", 0.5, 3), [1.0, 1.0, 1.0])
    assert np.allclose(shape_factors("geometric", 0.9, 4), [1.0, 0.9, 0.81, 0.729])
    assert np.allclose(shape_factors("step", 0.8, 4), [1.0, 0.8, 0.8, 0.8])
    with pytest.raises(ValueError, match="unknown shape"):
        shape_factors("wavy", 1.0, 2)


def test_rates_broadcast_over_samples_and_cap_at_one() -> None:
    rates = rates_for_positions("geometric", np.array([0.5, 0.9]), np.array([1.2, 0.5]), 3)
    assert rates.shape == (2, 3)
    assert np.allclose(rates, [[0.5, 0.6, 0.72], [0.9, 0.45, 0.225]])
    assert rates_for_positions("step", 0.9, 1.5, 3).max() == 1.0


@given(alpha=st.floats(0.05, 0.99), k=st.integers(1, 20))
@settings(max_examples=60, deadline=None)
def test_flat_first_rate_is_leviathans_alpha(alpha: float, k: int) -> None:
    al = leviathan_accept_length(alpha, k)
    assert float(first_rate_for_accept_length("flat", 1.0, al, k)) == pytest.approx(alpha, abs=1e-9)
    assert alpha_for_accept_length(al, k) == pytest.approx(alpha, abs=1e-9)


@given(
    shape=st.sampled_from(["flat", "geometric", "step"]),
    decay=st.floats(0.3, 1.3),
    frac=st.floats(0.01, 0.99),
    k=st.integers(1, 16),
)
@settings(max_examples=80, deadline=None)
def test_anchor_round_trip(shape: str, decay: float, frac: float, k: int) -> None:
    """The first rate solved for an accept length gives back that accept length."""
    al = 1.0 + frac * k
    a1 = float(first_rate_for_accept_length(shape, decay, al, k))
    assert float(accept_length_of(rates_for_positions(shape, a1, decay, k))) == pytest.approx(
        al, rel=1e-9
    )


def test_scale_solves_every_sample_and_marks_the_unreachable() -> None:
    g = shape_factors("geometric", np.array([0.9, 0.95, 1.0]), 4)
    need = np.array([2.5, 5.5, 1.0])
    x = scale_for_accept_length(need, g)
    assert np.isnan(x[1]) and x[2] == 0.0
    assert float(accept_length_of(np.minimum(1, x[0] * g[0]))) == pytest.approx(2.5)


def test_accept_lengths_by_k_are_running_sums() -> None:
    rates = np.array([0.8, 0.5, 0.5])
    assert np.allclose(accept_lengths_by_k(rates), [1.8, 2.2, 2.4])


def test_continuation_keeps_the_list_and_extends_by_the_shape() -> None:
    listed = [0.8, 0.7]
    assert np.allclose(continue_rates(listed, "repeat", 1.0, 4), [0.8, 0.7, 0.7, 0.7])
    assert np.allclose(continue_rates(listed, "geometric", 0.9, 4), [0.8, 0.7, 0.63, 0.567])
    # step drops once, after position 1: a list of two is past the drop
    assert np.allclose(continue_rates(listed, "step", 0.5, 3), [0.8, 0.7, 0.7])
    assert np.allclose(continue_rates([0.8], "step", 0.5, 3), [0.8, 0.4, 0.4])
    assert np.allclose(continue_rates(listed, "geometric", 0.9, 1), [0.8])
    many = continue_rates(np.array([[0.8, 0.7], [0.6, 0.6]]), "geometric", np.array([0.9, 1.1]), 3)
    assert np.allclose(many, [[0.8, 0.7, 0.63], [0.6, 0.6, 0.66]])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), max_size=300))
def test_numpy_sum_rounds_as_numpy_does(values: list[float]) -> None:
    assert numpy_sum(values) == np.sum(np.array(values, dtype=float))


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["flat", "geometric", "step"]),
    st.floats(0.3, 1.2),
    st.floats(0.5, 40.0),
    st.integers(1, 36),
)
def test_one_entry_bisects_to_the_bits_of_the_array_solve(
    shape: str, decay: float, accept_length: float, k: int
) -> None:
    """A scalar need takes the float loop; inside a batch the array bisection: same bits."""
    g = shape_factors(shape, decay, k)
    one = scale_for_accept_length(accept_length, g)
    batch = scale_for_accept_length(np.array([accept_length, 2.0]), np.stack([g, g]))
    assert one.shape == ()
    assert np.array_equal(one, batch[0], equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.just(0.0), st.floats(0.1, 1.6)), min_size=1, max_size=40),
    st.floats(0.5, 42.0),
)
def test_one_entry_of_any_profile_bisects_to_the_bits_of_the_array_solve(
    steps: list[float], accept_length: float
) -> None:
    """Falling, rising (capped) and zero factors: the float bisection, which skips the
    AL of mids it can answer from the monotone points found around the root, takes the
    array bisection's steps to the last bit."""
    g = np.cumprod([1.0, *steps[1:]])
    one = scale_for_accept_length(accept_length, g)
    batch = scale_for_accept_length(np.array([accept_length, 2.0]), np.stack([g, g]))
    assert np.array_equal(one, batch[0], equal_nan=True)
