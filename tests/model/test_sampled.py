"""The closed forms over many draws: the vectorized solves and their exact shortcuts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.distinct_rows import distinct_rows
from sim.model.equal_rates import _distinct_values, equal_rates_at, equal_rates_for_accept_lengths
from sim.model.profile_scales import (
    _pair_accept_length,
    _row_accept_lengths,
    scales_for_accept_lengths,
)
from sim.model.sampled import SampledModel
from sim.model.shapes import accept_lengths_by_k
from tests.model import sampled_reference


def _profiles(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    steps = rng.uniform(0.5, 1.05, (n, k - 1))
    return np.cumprod(np.concatenate([np.ones((n, 1)), steps], axis=1), axis=1)


def _factors(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """Profiles that fall, rise past 1 (capped rates) or hold, some with a zero factor."""
    g = _profiles(rng, n, k) * rng.choice([1.0, 1.0, 1.0, 1.6], (n, 1))
    g[:, 0] = 1.0
    if k > 2:
        g[rng.random(n) < 0.1, k - 1] = 0.0
    return g


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 60))
def test_pairs_by_position_sum_to_the_bits_of_their_rows(seed: int, big_k: int, n: int) -> None:
    """Position by position over the pairs that reach it, each pair's row of K terms sums
    to the bits NumPy gives the row (the reference's ``c.sum(axis=1)``)."""
    rng = np.random.default_rng(seed)
    g = _factors(rng, n, big_k)
    ks = np.sort(rng.integers(0, big_k, n))[::-1]
    x = rng.uniform(0.0, 1.5, n) * rng.choice([1.0, 1.0, 1e-3, 0.0], n)
    mask = np.arange(big_k)[None, :] <= ks[:, None]
    want = sampled_reference.pair_accept_length(x, g, mask)
    got = _pair_accept_length(x, g[:, : ks[0] + 1].T.copy(), ks, big_k)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 70), st.integers(1, 40))
def test_a_rows_accept_lengths_at_every_k_are_the_bits_of_its_pairs(
    seed: int, big_k: int, n: int
) -> None:
    """``_row_accept_lengths`` (a row's terms and lanes at one scale computed once for its
    pairs) gives every pair (row, k), in any order, at its row's scale the bits
    ``_pair_accept_length`` gives it, for K below, at and past multiples of 8 and scales
    that cap some rates."""
    rng = np.random.default_rng(seed)
    g = _factors(rng, n, big_k)
    x = rng.uniform(0.0, 1.5, n) * rng.choice([1.0, 1.0, 1e-3, 0.0, 1e6], n)
    rows = np.repeat(np.arange(n), big_k)
    ks = np.tile(np.arange(big_k), n)
    order = np.argsort(-ks, kind="stable")
    want, _ = _pair_accept_length(
        x[rows[order]], g[rows[order]][:, : ks[order][0] + 1].T.copy(), ks[order], big_k
    )
    shuffled = rng.permutation(rows.size)  # the pairs in any order
    got = _row_accept_lengths(x, g, rows[order][shuffled], ks[order][shuffled])
    assert got.tobytes() == want[shuffled].tobytes()  # -0.0 and 0.0 told apart too


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 30), st.booleans())
def test_scales_are_the_bits_of_the_row_by_row_solve(
    seed: int, big_k: int, n: int, with_guess: bool
) -> None:
    rng = np.random.default_rng(seed)
    g = _factors(rng, n, big_k)
    need = rng.uniform(0.8, big_k + 2.5, (n, big_k))
    guess = equal_rates_for_accept_lengths(need) if with_guess else None
    want = sampled_reference.scales_for_accept_lengths(need, g, guess)
    assert np.array_equal(scales_for_accept_lengths(need, g, guess), want, equal_nan=True)


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


def _model(rng: np.random.Generator, n: int, k: int, per_token: bool) -> SampledModel:
    return SampledModel(
        decode_ms=rng.uniform(20, 30, n),
        fixed_ms=np.linspace(30, 80, k)[None, :] * rng.uniform(0.9, 1.1, (n, 1)),
        rates=np.full((n, k), 0.7),
        factors=_factors(rng, n, k) if per_token else _profiles(rng, n, k),
        extend_per_token_ms=rng.uniform(0.0, 1.0, n) if per_token else None,
    )


def test_requirement_without_mean_rates_solves_the_same_scales() -> None:
    model = _model(np.random.default_rng(3), 30, 12, per_token=False)
    full = model.requirement(60.0, flat=False)
    lean = model.requirement(60.0, flat=False, mean=False)
    assert np.array_equal(full.scale, lean.scale, equal_nan=True)
    assert np.array_equal(full.first_rate, lean.first_rate, equal_nan=True)
    assert np.isnan(lean.mean_rate).all()
    assert not np.isnan(full.mean_rate).all()


def test_targets_solved_together_have_the_bits_of_each_alone() -> None:
    model = _model(np.random.default_rng(11), 25, 20, per_token=True)
    window = np.arange(20) < 9
    targets, columns = [40.0, 60.0, 90.0], [None, window, None]
    for flat, mean in ((True, True), (False, False)):
        together = model.requirements(targets, flat, columns, mean)
        for t, c, got in zip(targets, columns, together, strict=True):
            alone = model.requirement(t, flat, c, mean)
            assert got.tok_s == t
            for name in ("need", "first_rate", "mean_rate", "flat_alpha", "scale"):
                want = getattr(alone, name)
                assert np.array_equal(getattr(got, name), want, equal_nan=True), name
                for i in (0, 13):  # and each row alone
                    one = model.rows(slice(i, i + 1)).requirement(t, flat, c, mean)
                    assert np.array_equal(getattr(one, name)[0], want[i], equal_nan=True)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 30))
def test_lowest_only_keeps_each_rows_lowest_scale_to_the_bit(seed: int, big_k: int, n: int) -> None:
    """Pairs stopped once above their row's lowest come back +inf; the lowest entry of
    every row (where and what) is that of the full solve, needs <= 1 (scale 0) included."""
    rng = np.random.default_rng(seed)
    g = _factors(rng, n, big_k)
    need = rng.uniform(0.9, big_k + 2.5, (n, big_k))
    full = scales_for_accept_lengths(need, g)
    lean = scales_for_accept_lengths(need, g, lowest_only=True)
    key_full, key_lean = (np.where(np.isnan(a), np.inf, a) for a in (full, lean))
    assert np.array_equal(key_full.argmin(axis=1), key_lean.argmin(axis=1))
    assert np.array_equal(key_full.min(axis=1), key_lean.min(axis=1))
    kept = np.isfinite(lean)
    assert np.array_equal(lean[kept], full[kept])  # what is kept has the full solve's bits
    assert np.all(np.isinf(lean[~kept]) | np.isnan(full[~kept]))


def test_lowest_only_solves_few_pairs_beyond_each_rows_lowest() -> None:
    """Each row's likeliest lowest pair is solved first; the other pairs whose accept
    length at the row's bound falls short stop without a Newton step (+inf). Of the 22.6
    entries a row the full solve finds here, 4.1 stay finite (12.7 when pairs stopped only
    once a Newton step showed them above the row's lowest): the one-at-a-time studies'
    Newton steps fell to a third."""
    rng = np.random.default_rng(11)
    n, big_k = 200, 24
    g = _profiles(rng, n, big_k)
    need = np.sort(rng.uniform(1.5, 4.0, (n, 1)) * rng.uniform(1.0, 1.6, (n, big_k)), axis=1)
    full = scales_for_accept_lengths(need, g)
    lean = scales_for_accept_lengths(need, g, lowest_only=True)
    assert np.isfinite(full).sum(axis=1).mean() > 15
    assert np.isfinite(lean).sum(axis=1).mean() < 6
    key_full, key_lean = (np.where(np.isnan(a), np.inf, a) for a in (full, lean))
    assert np.array_equal(key_full.min(axis=1), key_lean.min(axis=1))


def test_answers_at_the_best_k_have_the_bits_of_the_full_solve() -> None:
    some = _model(np.random.default_rng(5), 40, 24, per_token=True)
    again = np.r_[np.arange(40), [3, 3, 17, 39]]  # rows the same to the bit solve the same
    model = SampledModel(
        some.decode_ms[again],
        some.fixed_ms[again],
        some.rates[again],
        some.factors[again],
        some.per_token_ms[again],
    )
    window = (np.arange(24) >= 3) & (np.arange(24) < 15)
    targets, columns = [45.0, 70.0, 400.0], [window, None, None]
    for flat, mean in ((True, True), (False, False)):
        best = model.requirements_at_best(targets, columns, flat, mean)
        for t, c, got in zip(targets, columns, best, strict=True):
            want = model.requirement(t, flat, c, mean).only(c).at_best()
            for a, b in zip(got, want, strict=True):
                assert np.array_equal(a, b, equal_nan=True)
        assert (best[2][0] == 0).all() and (best[0][0] > 0).any()  # 400 tok/s: out of reach


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([10, 40]))
def test_equal_rates_bisect_to_the_bits_of_the_general_closed_form(seed: int, steps: int) -> None:
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 65, (30, 4)).astype(float)
    need = rng.uniform(0.5, 1.0, (30, 4)) * (k + 2.0)
    need[0, 0], need[1, 1] = np.nan, np.inf
    want = sampled_reference.equal_rates(need, k, steps)
    assert np.array_equal(equal_rates_at(need, k, steps), want, equal_nan=True)


def test_distinct_values_are_numpys_unique_counted_or_sorted() -> None:
    """Draft lengths (whole numbers) are counted, anything else goes to np.unique: either
    way the values and each element's index are np.unique's."""
    rng = np.random.default_rng(3)
    whole = rng.integers(2, 40, (257, 16)).astype(float)
    other = [whole + 0.5, -whole, np.array([np.nan, 2.0, np.inf]), np.array([1e9, 3.0])]
    for m in [whole, whole[:, :1], *other]:
        values, which = _distinct_values(m)
        want_values, want_which = np.unique(m, return_inverse=True)
        assert np.array_equal(values, want_values, equal_nan=True)
        assert np.array_equal(which.reshape(m.shape), want_which.reshape(m.shape))


def test_distinct_rows_tell_rows_apart_bit_for_bit() -> None:
    """One index per distinct row, every row mapped back to its own bits: rows that
    differ only in a zero's sign or a NaN's payload are different rows."""
    rng = np.random.default_rng(4)
    base = rng.random((30, 8))
    base[1, 2], base[2, 2] = 0.0, -0.0
    base[3, 5] = np.nan
    base[4] = base[3]
    rows = base[rng.integers(0, 30, 200)].view(np.uint64)
    first, again = distinct_rows(rows)
    assert np.array_equal(rows[first][again], rows)
    assert len({r.tobytes() for r in rows}) == first.size == len({r.tobytes() for r in rows[first]})
