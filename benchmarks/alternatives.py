"""What a user would write instead of the fast engine, and the engine's floor.

``numpy_alternative`` is the best 20-line NumPy implementation of the seed model we could
write (fixed cycles, one rate profile): 32-bit uniforms (halves of raw PCG64 outputs, as the
engine draws them; 10-25% faster than NumPy's float32 uniforms) for a window of cycles per
request wide enough for nearly all, L by k compares with integer thresholds, a prefix sum,
the first passage by a count, and a scalar loop for the rare request the window does not
cover. ``stdlib_loop`` is the per-cycle Python loop with ``random.random``. ``floor`` is the
work the engine cannot avoid: the 32-bit uniforms of the cycles (half a raw PCG64 output
each, drawn in cache-sized blocks) and k compares a cycle.
"""

from __future__ import annotations

import random

import numpy as np


def numpy_alternative(
    rates: list[float], tokens: int, requests: int, replications: int, cycle_ms: float, seed: int
) -> np.ndarray:
    """Per-request tok/s, shape (replications, requests)."""
    rng = np.random.default_rng(seed)
    c = np.cumprod(np.asarray(rates, dtype=np.float64))  # P(L >= j + 2), decreasing
    mean = 1.0 + c.sum()
    var = 1.0 + ((2 * np.arange(1, c.size + 1) + 1) * c).sum() - mean**2
    width = min(tokens, int(tokens / mean + 6.0 * np.sqrt(tokens * var / mean**3)) + 4)
    width += width % 2  # whole 64-bit outputs a request
    thresholds = (np.ceil(c[c > 0] * 2.0**32) - 1).astype(np.uint32)  # accept j: u <= t_j
    cycles = np.empty((replications, requests), dtype=np.int64)
    for r in range(replications):
        raw = rng.bit_generator.random_raw(requests * width // 2)
        u = raw.view(np.uint32).reshape(requests, width)
        length = np.ones(u.shape, dtype=np.int16)
        for t_j in thresholds:  # L = 1 + #{j : u <= t_j}
            length += u <= t_j
        total = np.cumsum(length, axis=1, dtype=np.int16)
        n = (total < tokens).sum(axis=1) + 1
        for q in np.flatnonzero(n > width):  # rare: not done within width cycles
            left, n[q] = tokens - int(total[q, -1]), width
            while left > 0:
                left, n[q] = left - 1 - int((rng.random() < c).sum()), n[q] + 1
        cycles[r] = n
    return 1000.0 * tokens / (cycles * cycle_ms)


def stdlib_loop(
    rates: list[float], tokens: int, requests: int, replications: int, cycle_ms: float, seed: int
) -> list[float]:
    """Per-request tok/s from one Python iteration per cycle and draft (``random.random``)."""
    draw = random.Random(seed).random
    out = []
    for _ in range(requests * replications):
        emitted, ms = 0, 0.0
        while emitted < tokens:
            length = 1
            for a in rates:
                if draw() < a:
                    length += 1
                else:
                    break
            emitted += length
            ms += cycle_ms
        out.append(1000.0 * tokens / ms)
    return out


FLOOR_BLOCK = 1 << 16


def floor(cycles: int, num_steps: int, seed: int = 1) -> None:
    """Draw ``cycles`` 32-bit uniforms and make ``num_steps`` compares on each."""
    bits_gen = np.random.PCG64(seed)
    ge = np.empty(FLOOR_BLOCK, dtype=bool)
    threshold = np.uint32(2**31)
    done = 0
    while done < cycles:
        m = min(FLOOR_BLOCK, cycles - done)
        m += m % 2
        bits = bits_gen.random_raw(m // 2).view(np.uint32)
        for _ in range(num_steps):
            np.less_equal(bits, threshold, out=ge[:m])
        done += m
