"""Conditional and cumulative acceptance rates, and the law of tokens per cycle.

Vocabulary (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
Decoding"; vLLM vllm/v1/spec_decode/metrics.py): conditional per-position rates a_1..a_k;
cumulative rates c_i = a_1 ... a_i (c_0 = 1); tokens per cycle L = accepted drafts + 1, so
P(L >= j + 1) = c_j and the accept length is AL = E[L] = c_0 + ... + c_k.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def extend_rates(rates: ArrayLike, num_steps: int) -> np.ndarray:
    """Rates a_1..a_k, shape (num_steps,), from a list whose last entry repeats beyond it."""
    listed = np.asarray(rates, dtype=float)
    if num_steps <= len(listed):
        return listed[:num_steps].copy()
    return np.concatenate([listed, np.full(num_steps - len(listed), listed[-1])])


def cumulative_rates(rates: ArrayLike) -> np.ndarray:
    """c_1..c_k = running products of conditional rates; shape (..., k) -> (..., k)."""
    return np.cumprod(np.asarray(rates, dtype=float), axis=-1)


def pmf_from_cumulative(cumulative: ArrayLike) -> np.ndarray:
    """P(L = j + 1), j = 0..k, from cumulative rates of shape (..., k): shape (..., k + 1).

    P(L = j + 1) = c_j - c_(j+1) with c_0 = 1 and c_(k+1) = 0.
    """
    c = np.asarray(cumulative, dtype=float)
    ones = np.ones((*c.shape[:-1], 1))
    surv = np.concatenate([ones, c], axis=-1)  # P(L >= j + 1)
    nxt = np.concatenate([c, np.zeros_like(ones)], axis=-1)  # P(L >= j + 2)
    return surv - nxt


def accept_length_pmf(rates: ArrayLike) -> np.ndarray:
    """P(L = j + 1) for j = 0..k, shape (k + 1,), from conditional rates of shape (k,)."""
    return pmf_from_cumulative(cumulative_rates(rates))


def mean_accept_length(rates: ArrayLike) -> float:
    """AL = E[L] = 1 + sum_i c_i for conditional rates of shape (k,)."""
    return float(1.0 + cumulative_rates(rates).sum())


def length_moments(cumulative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of L per request from cumulative rates of shape (..., k).

    E[L] = sum_{j=0..k} c_j and E[L^2] = sum_{j=0..k} (2j + 1) c_j (c_0 = 1), since
    P(L >= j + 1) = c_j. Returns two arrays of shape (...).
    """
    k = cumulative.shape[-1]
    mean = 1.0 + cumulative.sum(axis=-1)
    second = 1.0 + cumulative @ (2.0 * np.arange(1, k + 1) + 1.0)
    return mean, np.maximum(second - mean**2, 0.0)
