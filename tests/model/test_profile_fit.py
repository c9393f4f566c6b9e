"""Shape fits recover known decay shapes; shapes are chosen by held-out error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.profile_fit import (
    ProfileData,
    choose_shape,
    fit_profile,
    holdout_error,
    predict,
    predict_shape,
)
from sim.model.shapes import accept_lengths_by_k, rates_for_positions


def _cumulative(shape: str, a1: float, decay: float, n: int, sigma: float, rng) -> ProfileData:
    c = np.cumprod(rates_for_positions(shape, a1, decay, n))
    noisy = c + rng.normal(0.0, sigma, n)
    return ProfileData(tuple(range(1, n + 1)), tuple(noisy), (sigma,) * n)


@pytest.mark.parametrize(("shape", "a1", "decay"), [("geometric", 0.8, 0.93), ("step", 0.75, 0.85)])
def test_fit_recovers_a_known_shape_from_per_position_rates(shape, a1, decay) -> None:
    """Seeded noise of 0.005 on c_1..c_8: within 4 standard errors of the truth."""
    fit = fit_profile(shape, _cumulative(shape, a1, decay, 8, 0.005, np.random.default_rng(3)))
    assert abs(fit.first_rate - a1) < 4 * fit.first_rate_stderr
    assert abs(fit.decay - decay) < 4 * fit.decay_stderr
    assert 0 < fit.decay_stderr < 0.05


def test_fit_recovers_a_geometric_decay_from_accept_lengths_at_several_k() -> None:
    rng = np.random.default_rng(11)
    ks = (1, 2, 4, 7)
    al = accept_lengths_by_k(rates_for_positions("geometric", 0.82, 0.9, 7))
    sigma = 0.01
    data = ProfileData(
        num_steps=ks,
        accept_length=tuple(al[k - 1] + rng.normal(0, sigma) for k in ks),
        accept_length_sigma=(sigma,) * len(ks),
    )
    fit = fit_profile("geometric", data)
    assert abs(fit.first_rate - 0.82) < 4 * fit.first_rate_stderr
    assert abs(fit.decay - 0.9) < 4 * fit.decay_stderr


def test_exact_data_are_fitted_exactly() -> None:
    data = _cumulative("step", 0.7, 0.9, 5, 1e-9, np.random.default_rng(0))
    fit = fit_profile("step", data)
    assert fit.first_rate == pytest.approx(0.7, abs=1e-6)
    assert fit.decay == pytest.approx(0.9, abs=1e-6)


@pytest.mark.parametrize("truth", ["geometric", "step"])
def test_held_out_error_chooses_the_true_shape(truth: str) -> None:
    data = _cumulative(truth, 0.8, 0.8, 8, 1e-4, np.random.default_rng(5))
    choice = choose_shape(data)
    assert choice is not None and choice.shape == truth
    assert choice.errors[truth] == min(e for e in choice.errors.values() if e is not None)


def test_two_depths_cannot_choose_a_shape() -> None:
    data = ProfileData((1, 2), (0.8, 0.6), (0.01, 0.01))
    assert choose_shape(data) is None
    assert holdout_error("geometric", data) is None
    assert holdout_error("flat", data) is not None  # one parameter: fit on 1, predict 2


def test_too_few_measurements_to_fit() -> None:
    with pytest.raises(ValueError, match="cannot fit"):
        fit_profile("geometric", ProfileData((1,), (0.8,), (0.01,)))


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["flat", "geometric", "step"]),
    st.one_of(st.floats(-0.5, 1.5), st.sampled_from([0.0, -0.0, 1.0])),
    st.floats(0.05, 2.0),
    st.lists(st.integers(1, 12), max_size=6),
    st.lists(st.integers(1, 12), max_size=6),
)
def test_one_profiles_prediction_in_floats_has_the_array_bits(
    shape: str, first: float, decay: float, positions: list[int], num_steps: list[int]
) -> None:
    data = ProfileData(
        positions=tuple(positions),
        cumulative=(0.5,) * len(positions),
        cumulative_sigma=(0.01,) * len(positions),
        num_steps=tuple(num_steps),
        accept_length=(2.0,) * len(num_steps),
        accept_length_sigma=(0.01,) * len(num_steps),
    )
    depth = max([*positions, *num_steps, 1])
    want = predict(data, rates_for_positions(shape, first, decay, depth))
    got = predict_shape(data, shape, first, decay, depth)
    assert got.shape == want.shape
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
