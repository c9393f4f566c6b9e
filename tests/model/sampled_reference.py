"""The sampled closed forms' Newton solve as it was written first (row layout, one row
of K factors a pair): the oracle the faster solve in sim/model/profile_scales.py must match to
the last bit (the figures every report prints come out of it)."""

from __future__ import annotations

import numpy as np

from sim.model.equal_rates import equal_rate_accept_length, equal_rates_at

_ITERATIONS = 40
_TOL = 1e-11


def pair_accept_length(
    x: np.ndarray, g: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AL(x) and dAL/dx for pairs: scales x (P,), factors g (P, K), positions mask (P, K)."""
    y = x[:, None] * g
    c = np.cumprod(np.minimum(y, 1.0), axis=1) * mask
    uncapped = np.cumsum(y < 1.0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 + c.sum(axis=1), (c * uncapped).sum(axis=1) / x


def scales_for_accept_lengths(
    need: np.ndarray, factors: np.ndarray, guess: np.ndarray | None = None
) -> np.ndarray:
    """x (n, K) with AL_k(x) = need[:, k - 1]: every pair's safeguarded Newton steps over
    its whole row of K factors, one pair's arithmetic at a time in NumPy's row order."""
    big_k = factors.shape[1]
    cap = np.arange(1, big_k + 1, dtype=float)[None, :] + 1.0
    reach = (need > 1.0) & (need <= cap + 1e-12)
    positive = np.where(factors > 0, factors, np.inf)
    hi_all = 1.0 / np.minimum.accumulate(positive, axis=1)
    mean_g = np.cumsum(factors, axis=1) / np.arange(1, big_k + 1)[None, :]
    rows, ks = np.nonzero(reach)
    target = need[rows, ks]
    start = equal_rates_at(target, ks + 1.0, steps=10) if guess is None else guess[rows, ks]
    x = np.clip(start / mean_g[rows, ks], 0.0, hi_all[rows, ks])
    lo, hi = np.zeros(rows.size), hi_all[rows, ks].copy()
    positions = np.arange(big_k)[None, :]
    active = np.arange(rows.size)
    for _ in range(_ITERATIONS):
        if active.size == 0:
            break
        xa = x[active]
        mask = positions <= ks[active][:, None]
        al, slope = pair_accept_length(xa, factors[rows[active]], mask)
        err = al - target[active]
        done = np.abs(err) <= _TOL * target[active]
        up = err > 0
        hi[active] = np.where(up, xa, hi[active])
        lo[active] = np.where(up, lo[active], xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = xa - err / slope
        inside = np.isfinite(newton) & (newton > lo[active]) & (newton < hi[active])
        step = np.where(inside, newton, 0.5 * (lo[active] + hi[active]))
        x[active] = np.where(done, xa, step)
        active = active[~done]
    out = np.where(need <= 1.0, 0.0, np.nan)
    out[rows, ks] = x
    return out


def equal_rates(need: np.ndarray, k: np.ndarray, steps: int) -> np.ndarray:
    """The equal rates' bisection through the general closed form (its end cases tested
    at every mid)."""
    lo, hi = np.zeros(need.shape), np.ones(need.shape)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        above = equal_rate_accept_length(mid, k) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = np.where(need <= 1.0, 0.0, 0.5 * (lo + hi))
    return np.where(need > k + 1.0 + 1e-12, np.nan, out)
