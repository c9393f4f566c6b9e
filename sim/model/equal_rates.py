"""The equal (flat) rate: Leviathan et al.'s accept length of k drafts at one rate,
(1 - a^(k+1)) / (1 - a) (``equal_rate_accept_length``), and the rate giving a needed
accept length at every k (``equal_rates_for_accept_lengths``, bisection on that closed
form, its first steps taken on a table of the dyadic mids), elementwise over arrays of
any shape (n draws x K draft lengths in the sampled model).
"""

from __future__ import annotations

import numpy as np

__all__ = ["equal_rate_accept_length", "equal_rates_at", "equal_rates_for_accept_lengths"]

#: Bisection steps of the equal-rate solve (the bracket [0, 1] shrinks 2^-40).
_BISECT = 40


def equal_rate_accept_length(alpha: np.ndarray, num_steps: np.ndarray | int) -> np.ndarray:
    """Leviathan et al. 2023: (1 - a^(k+1)) / (1 - a) elementwise, k + 1 at a = 1; with
    expm1/log1p so it stays accurate next to a = 1."""
    a = np.asarray(alpha, dtype=float)
    m = np.asarray(num_steps, dtype=float) + 1.0
    one_minus = 1.0 - a
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = _ratio(m, one_minus)
    return np.where(one_minus <= 0.0, m, np.where(a <= 0.0, 1.0, ratio))


def _ratio(m: np.ndarray, one_minus: np.ndarray) -> np.ndarray:
    """(1 - a^m) / (1 - a) from ``one_minus`` = 1 - a, with expm1/log1p (exact next to a
    = 1; meaningless at a = 0 or 1, which callers handle or never reach)."""
    return -np.expm1(m * np.log1p(-one_minus)) / one_minus


def equal_rates_for_accept_lengths(need: np.ndarray, steps: int = _BISECT) -> np.ndarray:
    """The equal rate alpha (n, K) whose accept length at k is need[:, k - 1] (bisection on
    the closed form); 0 where the need is at most 1, NaN where it exceeds k + 1."""
    big_k = need.shape[1]
    k = np.broadcast_to(np.arange(1, big_k + 1, dtype=float)[None, :], need.shape)
    return equal_rates_at(need, k, steps)


def equal_rates_at(need: np.ndarray, k: np.ndarray, steps: int) -> np.ndarray:
    """``equal_rates_for_accept_lengths`` elementwise: the need and its k, same shape.

    Every mid stays strictly inside (0, 1) (``steps`` <= 50), where
    ``equal_rate_accept_length`` is its ratio alone: that ratio is computed here, the same
    operations in the same order, without the end cases' tests. The first
    ``_TABLE_STEPS`` mids are the dyadic points j / 2^10, the same for every entry: the
    ratio is tabulated there once per distinct k and those steps compare with the table
    (the same values, so the same steps)."""
    m = k + 1.0
    lo, hi = _tabulated_steps(need, m, min(steps, _TABLE_STEPS))
    for _ in range(steps - min(steps, _TABLE_STEPS)):
        mid = 0.5 * (lo + hi)
        above = _ratio(m, 1.0 - mid) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = np.where(need <= 1.0, 0.0, 0.5 * (lo + hi))
    return np.where(need > k + 1.0 + 1e-12, np.nan, out)


#: Bisection steps of the equal rates taken on a table of their (dyadic) mids.
_TABLE_STEPS = 10


def _tabulated_steps(need: np.ndarray, m: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) after the first ``steps`` bisection steps of ``equal_rates_at`` (``m`` = k + 1),
    taken in the index space of the mids j / 2^steps (sums and halvings of dyadic numbers
    are exact) against the ratio tabulated at them for each distinct m."""
    scale = 2**steps
    values, which = _distinct_values(m)
    grid = np.arange(1, scale) / scale
    table = _ratio(values.reshape(-1, 1), 1.0 - grid)
    # table[which, mid - 1] read from the flat table (one 1-D take a step, not a 2-D gather)
    row = which.reshape(m.shape) * (scale - 1) - 1
    flat = table.ravel()
    lo, hi = np.zeros(need.shape, dtype=np.int64), np.full(need.shape, scale, dtype=np.int64)
    for _ in range(steps):
        mid = (lo + hi) >> 1  # both >= 0: the floor of the half
        above = flat.take(row + mid) >= need
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return lo / scale, hi / scale


#: Largest value ``_distinct_values`` counts (draft lengths are far below it).
_MAX_COUNTED = 4096


def _distinct_values(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(m, return_inverse=True)``: the distinct values, ascending, and each
    element's index among them. ``m`` holds draft lengths (k + 1, whole numbers >= 0)
    wherever it comes from here: counted by value instead of sorted (a sort of every
    element was most of the equal-rate solve's set-up), anything else goes to np.unique."""
    if m.size == 0 or not (np.all(m >= 0.0) and np.all(m <= _MAX_COUNTED)):
        return np.unique(m, return_inverse=True)
    whole = m.astype(np.int64)
    if not np.array_equal(whole, m):
        return np.unique(m, return_inverse=True)
    present = np.flatnonzero(np.bincount(whole.ravel()))
    index = np.zeros(present[-1] + 1, dtype=np.intp)
    index[present] = np.arange(present.size)
    return present.astype(float), index[whole]
