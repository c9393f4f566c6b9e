"""Exact finite-request closed forms: how many cycles a request of N tokens needs.

A request stops at the first cycle count n with L_1 + ... + L_n >= N
(docs/reference.md §Acceptance), L_i i.i.d. with pmf ``length_pmf`` (entry j for
L = j + 1). The distribution of n follows by dynamic programming over the tokens
emitted so far (mass below N carried, mass reaching
N retired). With cycles of a fixed T ms, a request's tok/s is 1000 N / (n T), so its exact
distribution, mean and P(tok/s >= target) follow; the long-run renewal-reward value
1000 E[L] / T is the N -> infinity limit.
"""

from __future__ import annotations

import numpy as np


def cycles_pmf(length_pmf: np.ndarray, tokens: int) -> np.ndarray:
    """P(n = m) for m = 0..tokens (shape (tokens + 1,); entry 0 is 0 for tokens >= 1)."""
    pmf = np.asarray(length_pmf, dtype=float)
    out = np.zeros(tokens + 1)
    below = np.zeros(tokens)  # P(S_m = t, not finished), t = 0..tokens-1
    below[0] = 1.0
    for m in range(1, tokens + 1):
        nxt = np.convolve(below, np.concatenate([[0.0], pmf]))  # shift by L >= 1
        out[m] = nxt[tokens:].sum()
        below = nxt[:tokens]
        if below.sum() < 1e-15:
            break
    return out


def request_tok_s_distribution(
    length_pmf: np.ndarray, tokens: int, cycle_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """Support (tok/s values, descending) and probabilities of a request's tok/s with
    fixed cycles: values 1000 N / (m T) for m = 1..N with P(n = m)."""
    p = cycles_pmf(length_pmf, tokens)[1:]
    m = np.arange(1, tokens + 1)
    return 1000.0 * tokens / (m * cycle_ms), p
