"""The closed forms over many draws: the vectorized solves and their exact shortcuts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.sampled import (
    SampledModel,
    _widths,
    equal_rates_for_accept_lengths,
    scales_for_accept_lengths,
)
from sim.model.shapes import accept_lengths_by_k


def _profiles(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    steps = rng.uniform(0.5, 1.05, (n, k - 1))
    return np.cumprod(np.concatenate([np.ones((n, 1)), steps], axis=1), axis=1)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_a_row_cut_at_its_width_sums_to_the_bits_of_the_whole_row(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    big_k = int(rng.integers(k, 41))
    c = rng.uniform(0.0, 1.0, (5, big_k)) * (np.arange(big_k) < k)
    width = int(_widths(np.array([k - 1]), big_k)[0])
    assert k <= width <= big_k
    assert np.array_equal(c[:, :width].sum(axis=1), c.sum(axis=1))


def test_scales_meet_the_accept_length_and_each_row_solves_alone() -> None:
    rng = np.random.default_rng(7)
    g = _profiles(rng, 40, 20)
    need = rng.uniform(0.8, 22.0, (40, 20))
    for guess in (None, equal_rates_for_accept_lengths(need)):
        x = scales_for_accept_lengths(need, g, guess)
        cap = np.arange(2, 22)[None, :]
        reach = (need > 1.0) & (need <= cap)
        assert np.array_equal(np.isnan(x), need > cap + 1e-12)
        assert np.all(x[need <= 1.0] == 0.0)
        rows, ks = np.nonzero(reach)
        al = accept_lengths_by_k(np.minimum(1.0, x[rows, ks][:, None] * g[rows]))
        got = al[np.arange(rows.size), ks]
        assert np.allclose(got, need[rows, ks], rtol=1e-9)
        for i in (0, 17, 39):  # a pair's steps do not depend on the other pairs'
            g_i = None if guess is None else guess[i : i + 1]
            alone = scales_for_accept_lengths(need[i : i + 1], g[i : i + 1], g_i)
            assert np.array_equal(alone[0], x[i], equal_nan=True)


def test_requirement_without_mean_rates_solves_the_same_scales() -> None:
    rng = np.random.default_rng(3)
    n, k = 30, 12
    model = SampledModel(
        decode_ms=rng.uniform(20, 30, n),
        fixed_ms=np.linspace(30, 80, k)[None, :] * rng.uniform(0.9, 1.1, (n, 1)),
        rates=np.full((n, k), 0.7),
        factors=_profiles(rng, n, k),
    )
    full = model.requirement(60.0, flat=False)
    lean = model.requirement(60.0, flat=False, mean=False)
    assert np.array_equal(full.scale, lean.scale, equal_nan=True)
    assert np.array_equal(full.first_rate, lean.first_rate, equal_nan=True)
    assert np.isnan(lean.mean_rate).all()
    assert not np.isnan(full.mean_rate).all()
