"""Sobol points: scipy's unscrambled points bit for bit; the scramble keeps the net and
makes each point uniform."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

from sim.errors import SpecsimError
from sim.model.sobol import BITS, MAX_DIMENSION, scrambled_sobol_points, sobol_points


@pytest.mark.parametrize("d", [1, 2, 3, 9, 64, MAX_DIMENSION])
@pytest.mark.parametrize("m", [0, 1, 5, 10])
def test_points_equal_scipy_unscrambled(d, m):
    ours = sobol_points(d, m)
    theirs = qmc.Sobol(d, scramble=False).random_base2(m)
    assert ours.shape == theirs.shape == (2**m, d)
    assert np.array_equal(ours, theirs)


def test_points_equal_scipy_at_many_points():
    assert np.array_equal(sobol_points(5, 16), qmc.Sobol(5, scramble=False).random_base2(16))


def _interval_counts(points: np.ndarray, levels: tuple[int, ...]) -> np.ndarray:
    """Points per elementary interval with 2**levels[i] cells along dimension i."""
    cells = [np.floor(points[:, i] * 2**a).astype(int) for i, a in enumerate(levels)]
    index = np.ravel_multi_index(cells, [2**a for a in levels])
    return np.bincount(index, minlength=2 ** sum(levels))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scramble_keeps_the_first_two_dimensions_a_zero_net(seed):
    """Dimensions 1-2 are a (0, m, 2)-net: one point in every elementary interval of volume
    2**-m, before and after the scramble."""
    m = 8
    for points in (sobol_points(2, m), scrambled_sobol_points(2, m, np.random.default_rng(seed))):
        for a in range(m + 1):
            assert np.all(_interval_counts(points, (a, m - a)) == 1), a


def test_scramble_keeps_the_interval_counts_of_higher_dimensions():
    """The scramble permutes elementary intervals: in dimensions 3-5 (t > 0) every pattern
    of counts over the intervals of volume 2**-m is the unscrambled one's."""
    m = 7
    plain = sobol_points(5, m)[:, 2:]
    shuffled = scrambled_sobol_points(5, m, np.random.default_rng(3))[:, 2:]
    for a in range(m + 1):
        for b in range(m + 1 - a):
            levels = (a, b, m - a - b)
            counts = np.sort(_interval_counts(shuffled, levels))
            assert np.array_equal(counts, np.sort(_interval_counts(plain, levels))), levels


def test_scrambled_coordinates_are_balanced():
    """Each coordinate of 2**m points holds one point per interval of width 2**-m, so its
    mean is within 2**-(m + 1) of 1/2."""
    m = 8
    points = scrambled_sobol_points(MAX_DIMENSION, m, np.random.default_rng(4))
    assert np.all(np.abs(points.mean(axis=0) - 0.5) <= 2.0 ** -(m + 1))
    assert np.all((points >= 0.0) & (points < 1.0))


def test_scrambled_points_are_uniform_over_seeds():
    """One point over many seeds is uniform: its coordinates' mean within 4 SE of 1/2
    (SE = 1/sqrt(12 R)) and a quarter of them in each quarter of [0, 1) (binomial, 4 SE)."""
    reps, d = 400, 4
    draws = np.array(
        [scrambled_sobol_points(d, 3, np.random.default_rng(s))[5] for s in range(reps)]
    )
    assert np.all(np.abs(draws.mean(axis=0) - 0.5) < 4 / np.sqrt(12 * reps))
    quarters = np.stack([np.sum(np.floor(draws * 4) == q, axis=0) for q in range(4)])
    assert np.all(np.abs(quarters - reps / 4) < 4 * np.sqrt(reps * 0.25 * 0.75))


def test_scramble_is_not_only_a_shift():
    """The linear scramble mixes bits: the XOR of two points differs between seeds (a pure
    digital shift would leave it at the unscrambled one's)."""
    plain = np.round(sobol_points(3, 4) * 2.0**BITS).astype(np.uint64)
    xors = set()
    for seed in range(4):
        points = scrambled_sobol_points(3, 4, np.random.default_rng(seed))
        ints = np.round(points * 2.0**BITS).astype(np.uint64)
        xors.add(tuple(ints[1] ^ ints[2]))
    assert len(xors) > 1 and tuple(plain[1] ^ plain[2]) not in xors


def test_same_generator_state_same_points():
    a = scrambled_sobol_points(6, 5, np.random.default_rng(9))
    assert np.array_equal(a, scrambled_sobol_points(6, 5, np.random.default_rng(9)))
    assert not np.array_equal(a, scrambled_sobol_points(6, 5, np.random.default_rng(10)))


def test_too_many_dimensions_is_one_clear_error():
    with pytest.raises(SpecsimError, match=f"up to {MAX_DIMENSION} dimensions"):
        sobol_points(MAX_DIMENSION + 1, 2)
