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

import functools

import numpy as np

__all__ = ["GAMMA", "counter_bits", "counter_bits_block", "counter_bits_step", "draw_keys"]

#: SplitMix64's Weyl increment (the odd integer nearest 2^64 / golden ratio).
GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = (np.uint64(s) for s in (30, 27, 31, 32))


def counter_bits(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """32-bit uniform integers (as int64, 0 .. 2^32 - 1) of shape broadcast(keys, counters).

    ``keys``: uint64 seeds; ``counters``: non-negative integers (the cycle index). Entry
    (i, c) is the top half of the c-th SplitMix64 output seeded with ``keys[i]``.
    """
    k = np.asarray(keys).astype(np.uint64)
    c = np.asarray(counters).astype(np.uint64)
    z = np.broadcast_arrays(k, c)[0] + (c + np.uint64(1)) * GAMMA
    return _mix_high(np.ascontiguousarray(z))


def counter_bits_block(keys: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
    """``counter_bits(keys[:, None], first[:, None] + arange(count))`` (shape (B, count)),
    computed with fewer array passes: each row's Weyl sequence starts at its own offset."""
    # unsigned array arithmetic wraps modulo 2^64 without warnings (scalars would warn)
    offsets = first.astype(np.uint64)
    offsets += np.uint64(1)
    offsets *= GAMMA
    offsets += keys.astype(np.uint64, copy=False)
    return _mix_high(offsets[:, None] + _steps(count)[None, :])


def counter_bits_step(keys: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """``counter_bits(keys, cycles)`` (shape (B,)): each request's draw of cycle ``cycles``,
    the first column of ``counter_bits_block``."""
    z = cycles.astype(np.uint64)
    z += np.uint64(1)
    z *= GAMMA
    z += keys.astype(np.uint64, copy=False)
    return _mix_high(z)


@functools.lru_cache(maxsize=64)
def _steps(count: int) -> np.ndarray:
    """0, gamma, 2 gamma, ... (count,) uint64, read-only (shared)."""
    steps = np.arange(count, dtype=np.uint64) * GAMMA
    steps.flags.writeable = False
    return steps


def _mix_high(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on ``z`` (overwritten), top 32 bits as int64."""
    t = np.empty_like(z)
    np.right_shift(z, _S30, out=t)
    np.bitwise_xor(z, t, out=z)
    np.multiply(z, _M1, out=z)
    np.right_shift(z, _S27, out=t)
    np.bitwise_xor(z, t, out=z)
    np.multiply(z, _M2, out=z)
    np.right_shift(z, _S31, out=t)
    np.bitwise_xor(z, t, out=z)
    np.right_shift(z, _S32, out=z)
    return z.view(np.int64)


def draw_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uint64 seeds from ``rng`` (one raw 64-bit draw each)."""
    return rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
