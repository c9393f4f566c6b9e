"""Acceptance coin flips as pure functions of uniforms (the engines hand in the draws).

Both samplers give exactly the chain's distribution (P(L >= j + 1) = c_j) and are monotone:
with the same uniforms, higher rates never give a shorter accept length, so scenarios that
differ only in rates share common random numbers.

* ``accept_lengths_inverse_cdf``: one uniform per cycle, L = 1 + #{j : u < c_j} (the fast
  engine does this on 32-bit uniform integers: ``accept_lengths_from_bits``);
* ``accept_length_sequential``: k uniforms per cycle, draft i accepted when u_i < a_i and
  draft i - 1 was (the SimPy engine, position by position as the protocol runs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def accept_lengths_inverse_cdf(u: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """Tokens per cycle by inverse cdf: L = 1 + #{j : u < c_j}.

    ``u``: uniforms on [0, 1), any shape S (one per cycle). ``cumulative``: c_1..c_k along
    the FIRST axis, shape (k, ...), each ``cumulative[j]`` broadcastable to S (a scalar when
    every cycle shares the rates; e.g. (k, B, 1, Q) for cycles laid out (B, C, Q)).
    Returns uint8 of shape S with 1 <= L <= k + 1. Exact: P(L >= j + 1) = P(u < c_j) = c_j.
    Monotone: larger c (higher rates) never lowers L for the same u.
    """
    out = np.ones(np.shape(u), dtype=np.uint8)
    for c_j in cumulative:
        out += u < c_j
    return out


def bit_thresholds(cumulative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds for 32-bit uniform integers B (uniform on 0 .. 2^32 - 1).

    Draft j is accepted when ``B <= t_j`` and ``c_j > 0``, with t_j = ceil(c_j 2^32) - 1:
    P = ceil(c_j 2^32) / 2^32, within 2^-32 of c_j, exactly 0 at c_j = 0 and exactly 1 at
    c_j = 1, and non-decreasing in c_j (common random numbers). Returns (t as uint32,
    c > 0 as bool), both of the shape of ``cumulative``.
    """
    c = np.asarray(cumulative, dtype=float)
    t = np.clip(np.ceil(c * 2.0**32) - 1.0, 0.0, 2.0**32 - 1.0)
    return t.astype(np.uint32), c > 0.0


def accept_lengths_from_bits(
    bits: np.ndarray, thresholds: np.ndarray, positive: np.ndarray
) -> np.ndarray:
    """``accept_lengths_inverse_cdf`` for 32-bit uniform integers (the fast engine's draws).

    ``bits``: uint32 of any shape S, one per cycle; ``thresholds``/``positive``: from
    ``bit_thresholds``, position j along the FIRST axis, each entry broadcastable to S.
    Returns uint8 of shape S: L = 1 + #{j : bits <= t_j and c_j > 0}.
    """
    out = np.ones(np.shape(bits), dtype=np.uint8)
    for t_j, p_j in zip(thresholds, positive, strict=True):
        out += (bits <= t_j) & p_j
    return out


def accept_length_sequential(u: Sequence[float], rates: Sequence[float]) -> int:
    """Tokens in one cycle, drafts checked position by position (plain Python floats).

    Draft i is accepted when ``u[i] < rates[i]`` and draft i - 1 was; the target adds one
    token (correction or bonus). ``u`` and ``rates`` have length k. Returns 1..k + 1.
    """
    length = 1
    for ui, ai in zip(u, rates, strict=True):
        if ui < ai:
            length += 1
        else:
            break
    return length
