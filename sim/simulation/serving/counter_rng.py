"""Counter-based random bits: the c-th draw of request r is a pure function of (key_r, c).

A serving iteration decides acceptance for every request of the batch at once, over a
block of iterations, and a block may be cut short when a request arrives. With draws
indexed by (request, cycle) instead of taken from a shared stream, the uniform of a
request's c-th cycle does not depend on the batch it ran in, on block boundaries or on the
speculation policy: every policy and the baseline see the same acceptance draws (common
random numbers), and any batch's draws are one vectorized expression.

The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014; the constants of Vigna's reference C code,
https://prng.di.unimi.it/splitmix64.c): its n-th output from seed s is mix(s + n gamma).
Each request's seed (``key``) is a 64-bit draw from the replication's acceptance stream.
The top 32 bits of each output are used, as the fast engine uses 32-bit uniform integers.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "GAMMA",
    "STEPS",
    "counter_bits",
    "counter_bits_block",
    "counter_bits_step",
    "draw_keys",
    "weyl_bits",
    "weyl_bits_block",
    "weyl_step",
    "weyl_term",
    "weyl_terms",
]

#: SplitMix64's Weyl increment (the odd integer nearest 2^64 / golden ratio).
GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = (np.uint64(s) for s in (30, 27, 31, 32))
_GAMMA_INT = int(GAMMA)
_MASK = 2**64 - 1


def counter_bits(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """32-bit uniform integers (as int64, 0 .. 2^32 - 1) of shape broadcast(keys, counters).

    ``keys``: uint64 seeds; ``counters``: non-negative integers (the cycle index). Entry
    (i, c) is the top half of the c-th SplitMix64 output seeded with ``keys[i]``.
    """
    k = np.asarray(keys).astype(np.uint64)
    c = np.asarray(counters).astype(np.uint64)
    z = np.broadcast_arrays(k, c)[0] + (c + np.uint64(1)) * GAMMA
    return _mix_high(np.ascontiguousarray(z))


def weyl_terms(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """key + (c + 1) gamma mod 2^64 (uint64, the shape of ``keys``): the Weyl term whose
    mix is draw c of ``key`` (SplitMix64's state before its output function)."""
    z = counters.astype(np.uint64)
    # unsigned array arithmetic wraps modulo 2^64 without warnings (scalars would warn)
    z += np.uint64(1)
    z *= GAMMA
    z += keys.astype(np.uint64, copy=False)
    return z


def weyl_term(key: int, counter: int) -> int:
    """``weyl_terms`` of one key and counter, in Python integers."""
    return (key + (counter + 1) * _GAMMA_INT) & _MASK


def weyl_step(counters: int) -> np.uint64:
    """What ``counters`` more draws add to a Weyl term (counters x gamma mod 2^64)."""
    return np.uint64((counters * _GAMMA_INT) & _MASK)


def weyl_bits(weyl: np.ndarray) -> np.ndarray:
    """The draws whose Weyl terms are ``weyl`` (B,), 32-bit as int64 (``weyl`` unchanged):
    ``_mix_high`` of a copy, its first step writing the copy."""
    z = np.right_shift(weyl, _S30)
    np.bitwise_xor(z, weyl, out=z)
    return _mix_rest(z, np.empty_like(z))


def weyl_bits_block(weyl: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` successive draws from Weyl terms ``weyl`` (B,), shape (B, count)."""
    return _mix_high(weyl[:, None] + _steps(count)[None, :])


def counter_bits_block(keys: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
    """``counter_bits(keys[:, None], first[:, None] + arange(count))`` (shape (B, count)),
    computed with fewer array passes: each row's Weyl sequence starts at its own offset."""
    return weyl_bits_block(weyl_terms(keys, first), count)


def counter_bits_step(keys: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """``counter_bits(keys, cycles)`` (shape (B,)): each request's draw of cycle ``cycles``,
    the first column of ``counter_bits_block``."""
    return _mix_high(weyl_terms(keys, cycles))


def _steps(count: int) -> np.ndarray:
    """0, gamma, 2 gamma, ... (count,) uint64, read-only: a view of ``STEPS`` up to its
    length, computed now beyond it (the same bits: uint64 products wrap alike)."""
    if count <= STEPS.size:
        return STEPS[:count]
    steps = np.arange(count, dtype=np.uint64) * GAMMA
    steps.flags.writeable = False
    return steps


#: The Weyl steps of the first 4,096 draws (uint64, read-only, 32 KiB): a block of a
#: serving run draws once per iteration, and its blocks rarely run longer.
STEPS: np.ndarray = np.arange(4096, dtype=np.uint64) * GAMMA
STEPS.flags.writeable = False


def _mix_high(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on ``z`` (overwritten), top 32 bits as int64."""
    t = np.empty_like(z)
    np.right_shift(z, _S30, out=t)
    np.bitwise_xor(z, t, out=z)
    return _mix_rest(z, t)


def _mix_rest(z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``_mix_high`` after its first xor-shift (``t``: scratch of z's shape)."""
    np.multiply(z, _M1, out=z)
    np.right_shift(z, _S27, out=t)
    np.bitwise_xor(z, t, out=z)
    np.multiply(z, _M2, out=z)
    np.right_shift(z, _S31, out=t)
    np.bitwise_xor(z, t, out=z)
    np.right_shift(z, _S32, out=z)
    return z.view(np.int64)


def draw_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uint64 seeds from ``rng``: its bit generator's next ``n`` raw 64-bit outputs
    (``rng.integers(0, 2**64, n, dtype=np.uint64)`` gives the same, at over ten times the
    cost for a few keys: tests/simulation/serving/test_random.py)."""
    return rng.bit_generator.random_raw(n)
