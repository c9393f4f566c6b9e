"""Counter-based acceptance draws and length distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.simulation.serving.counter_rng import (
    GAMMA,
    STEPS,
    counter_bits,
    counter_bits_block,
    draw_keys,
    weyl_bits,
    weyl_bits_block,
    weyl_step,
    weyl_term,
    weyl_terms,
)
from sim.simulation.serving.lengths import Empirical, Fixed, LogNormal
from sim.simulation.serving.workload import acceptance_thresholds


def _splitmix(seed: int, n: int) -> int:
    """The n-th output (0-based) of Vigna's splitmix64.c, top 32 bits."""
    m = 2**64
    z = (seed + (n + 1) * 0x9E3779B97F4A7C15) % m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % m
    return (z ^ (z >> 31)) >> 32


def test_bits_are_splitmix64():
    keys = draw_keys(np.random.default_rng(3), 4)
    got = counter_bits_block(keys, np.array([0, 5, 2**33, 7]), 6)
    for i, (key, first) in enumerate(zip(keys.tolist(), [0, 5, 2**33, 7], strict=True)):
        assert got[i].tolist() == [_splitmix(key, first + c) for c in range(6)]
    np.testing.assert_array_equal(
        got, counter_bits(keys[:, None], np.array([0, 5, 2**33, 7])[:, None] + np.arange(6))
    )
    # from the Weyl terms a decode batch keeps, advanced 3 draws at a time
    weyl = weyl_terms(keys, np.array([0, 5, 2**33, 7]))
    assert weyl.tolist() == [
        weyl_term(int(k), c) for k, c in zip(keys, [0, 5, 2**33, 7], strict=True)
    ]
    np.testing.assert_array_equal(weyl_bits(weyl), got[:, 0])
    weyl += weyl_step(3)
    np.testing.assert_array_equal(weyl_bits_block(weyl, 3), got[:, 3:])


@pytest.mark.parametrize("seed", [0, 1, 2**40 + 3])
def test_keys_are_the_generators_uniform_64_bit_integers(seed):
    """``draw_keys`` takes raw outputs: what ``integers(0, 2**64, dtype=uint64)`` draws."""
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    for n in (1, 16, 64, 1):
        np.testing.assert_array_equal(
            draw_keys(a, n), b.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        )
    assert a.random() == b.random()  # the streams stay in step


def test_bits_are_uniform_and_independent_across_keys_and_cycles():
    keys = draw_keys(np.random.default_rng(4), 200)
    u = counter_bits_block(keys, np.zeros(200, dtype=np.int64), 500) / 2.0**32  # (200, 500)
    assert stats.kstest(u.ravel(), "uniform").pvalue > 1e-3
    # neighbouring cycles and neighbouring requests uncorrelated
    for a, b in ((u[:, :-1], u[:, 1:]), (u[:-1], u[1:])):
        r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        assert abs(r) < 4 / np.sqrt(a.size)


def test_thresholds_give_the_cumulative_rates():
    t = acceptance_thresholds(np.array([0.0, 0.3, 1.0]))
    assert t.tolist() == [0, int(np.ceil(0.3 * 2**32)), 2**32]


def test_lengths():
    rng = np.random.default_rng(0)
    assert Fixed(7).sample(rng, 3).tolist() == [7, 7, 7]
    ln = LogNormal(200.0, 0.8, 4000)
    x = ln.sample(rng, 200_000)
    assert x.min() >= 1 and x.max() <= 4000
    assert x.mean() == pytest.approx(ln.mean, abs=4 * x.std() / np.sqrt(x.size))
    emp = Empirical((3, 5, 5, 9))
    y = emp.sample(rng, 100_000)
    assert set(np.unique(y)) == {3, 5, 9} and y.mean() == pytest.approx(emp.mean, abs=0.05)
    with pytest.raises(ValueError):
        LogNormal(-1.0, 0.5, 10)


@pytest.mark.parametrize("count", [0, 1, 7, STEPS.size, STEPS.size + 1, 3 * STEPS.size])
def test_a_block_of_draws_is_the_same_from_the_step_table_or_beyond_it(count):
    """Within ``STEPS`` a block's Weyl steps are a view of the read-only table, beyond it
    computed: the draws are those of one counter at a time either way."""
    keys = draw_keys(np.random.default_rng(5), 3)
    first = np.array([0, 11, 2**40], dtype=np.uint64)
    block = counter_bits_block(keys, first, count)
    for j in (0, count // 2, count - 1) if count else ():
        assert np.array_equal(block[:, j], counter_bits(keys, first + np.uint64(j)))
    assert block.shape == (3, count)
    assert np.array_equal(STEPS[:5], np.arange(5, dtype=np.uint64) * GAMMA)
    with pytest.raises(ValueError, match="read-only"):
        STEPS[0] = 1
