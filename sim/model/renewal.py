"""Exact finite-request closed forms: how many cycles a request of N tokens needs.

A request stops at the first cycle count n with L_1 + ... + L_n >= N
(docs/reference.md §Acceptance), L_i i.i.d. with pmf ``length_pmf`` (entry j for
L = j + 1). The distribution of n follows by dynamic programming over the tokens
emitted so far (mass below N carried, mass reaching
N retired). With cycles of a fixed T ms, a request's tok/s is 1000 N / (n T), so its exact
distribution, mean and P(tok/s >= target) follow; the long-run renewal-reward value
1000 E[L] / T is the N -> infinity limit.

When a cycle's duration depends on its L through the draft extend, T(L) = T + s (L - t)
(sim/model/cycle.py), a request's time is n (T - s t) + s E with E = L_1 + ... + L_n the
tokens its cycles emitted (N .. N + k), so the joint law of (n, E) gives its tok/s exactly.
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


def cycles_and_emitted_pmf(length_pmf: np.ndarray, tokens: int) -> np.ndarray:
    """P(n = m, E = N + o) for m = 0..N and overshoot o = 0..k, shape (N + 1, k + 1): the
    joint law of a request's cycle count and the tokens its cycles emitted."""
    pmf = np.asarray(length_pmf, dtype=float)
    k = pmf.size - 1
    out = np.zeros((tokens + 1, k + 1))
    below = np.zeros(tokens)
    below[0] = 1.0
    step = np.concatenate([[0.0], pmf])
    for m in range(1, tokens + 1):
        nxt = np.convolve(below, step)  # emitted after m cycles, 0 .. tokens - 1 + k + 1
        reached = nxt[tokens:]
        out[m, : reached.size] = reached[: k + 1]
        below = nxt[:tokens]
        if below.sum() < 1e-15:
            break
    return out


def request_tok_s_distribution(
    length_pmf: np.ndarray,
    tokens: int,
    cycle_ms: float,
    extend_per_token_ms: float = 0.0,
    extend_tokens: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Support (tok/s values) and probabilities of a request's tok/s.

    A cycle that emits L tokens takes ``cycle_ms + extend_per_token_ms (L -
    extend_tokens)``. Fixed cycles: values 1000 N / (m T) for m = 1..N with P(n = m);
    otherwise 1000 N / (m (T - s t) + s E) over the joint law of (n, E).
    """
    if extend_per_token_ms == 0.0:
        p = cycles_pmf(length_pmf, tokens)[1:]
        m = np.arange(1, tokens + 1)
        return 1000.0 * tokens / (m * cycle_ms), p
    joint = cycles_and_emitted_pmf(length_pmf, tokens)[1:]  # (N, k + 1)
    m = np.arange(1, tokens + 1)[:, None]
    emitted = tokens + np.arange(joint.shape[1])[None, :]
    time_ms = m * (cycle_ms - extend_per_token_ms * extend_tokens) + extend_per_token_ms * emitted
    keep = joint > 0
    return 1000.0 * tokens / time_ms[keep], joint[keep]
