"""Rank-rate profiles: the matrix q (depth x rank) from a top-1 rate per depth and a shape.

A search or a conversion moves one number, the top-1 rate q_1 (the role alpha plays for a
chain), so the other ranks need a rule that ties them to it. The rule here is the
*residual share*: of the probability the top-1 guess misses, a fixed share h_r goes to
the rank-r guess,

    q_r(d) = (1 - q_1(d)) h_r,   r = 2..W,   h_r >= 0,   h_2 + ... + h_W <= 1,

so every row sums to q_1 + (1 - q_1)(h_2 + ... + h_W) <= 1 for any q_1 in [0, 1] and the
lower ranks vanish as the top-1 guess becomes certain. Raising q_1 lowers q_2..q_W, yet
E[L] of a rank-dominant tree (sim/model/tree/nodes.py) still rises: at a node, the children
contribute q_1 (1 + V_1) + (1 - q_1) sum_r h_r (1 + V_r), V_r the expected accepted drafts
below the rank-r child; its derivative in q_1 is (1 + V_1) - sum_r h_r (1 + V_r) >=
(1 + V_1)(1 - sum_r h_r) >= 0 because V_r <= V_1 when the rank-1 subtree contains the
others, and the V's rise too by induction from the leaves. A measured profile p_1..p_W
(e.g. Sequoia's acceptance vectors) gives h_r = p_r / (1 - p_1). The shares may be one
row for every depth (the top-1 rate may still vary, e.g. by the decay shapes of the
acceptance model) or one row per depth, when rank rates were measured at each depth.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Shares", "extend_shares", "residual_rank_rates", "residual_shares", "share_count"]

#: Residual shares h_2..h_W: one tuple for every depth, or one tuple per depth (the last
#: repeating below), when the rank profile differs by depth.
Shares = tuple[float, ...] | tuple[tuple[float, ...], ...]


def share_count(shares: Shares) -> int:
    """W - 1: the ranks below the top-1 that ``shares`` give rates for."""
    if shares and isinstance(shares[0], tuple):
        return len(shares[0])
    return len(shares)


def residual_shares(profile: ArrayLike) -> np.ndarray:
    """Shares h_2..h_W, shape (W - 1,), of a measured profile p_1..p_W: p_r / (1 - p_1).

    ValueError unless 0 <= p_r, p_1 < 1 and p_1 + ... + p_W <= 1.
    """
    p = np.asarray(profile, dtype=float)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"a rank profile is a list p_1..p_W, got shape {p.shape}")
    if np.any(p < 0.0) or p.sum() > 1.0 + 1e-9:
        raise ValueError("a rank profile has entries >= 0 summing to at most 1")
    if p[0] >= 1.0:
        raise ValueError("a rank profile with p_1 = 1 leaves nothing for the other ranks")
    return np.minimum(p[1:] / (1.0 - p[0]), 1.0)


def residual_rank_rates(top1: ArrayLike, shares: ArrayLike) -> np.ndarray:
    """q of shape (..., D, W) from top-1 rates of shape (..., D) and shares h_2..h_W of
    shape (W - 1,), or (D', W - 1) for shares that differ by depth (row d at depth d + 1,
    the last row for depths past D'): q[..., d, 0] = top-1, q[..., d, r] = (1 - top-1)
    h_(r+1)(d)."""
    t = np.asarray(top1, dtype=float)
    h = np.asarray(shares, dtype=float)
    if h.ndim not in (1, 2) or np.any(h < 0.0) or np.any(h.sum(axis=-1) > 1.0 + 1e-9):
        raise ValueError("residual shares are >= 0 and sum to at most 1 (at each depth)")
    if np.any(t < 0.0) or np.any(t > 1.0):
        raise ValueError("top-1 rates must lie in [0, 1]")
    if h.ndim == 2:
        depth = t.shape[-1] if t.ndim else 1
        h = h[np.minimum(np.arange(depth), h.shape[0] - 1)]
    rest = (1.0 - t)[..., None] * h
    return np.concatenate([t[..., None], rest], axis=-1)


def extend_shares(shares: ArrayLike, width: int) -> np.ndarray:
    """Shares h_2..h_width, shape (width - 1,): the given ones, then geometric with the
    ratio of the last two (ValueError unless at least two shares with 0 < last < previous)."""
    h = np.asarray(shares, dtype=float)
    if h.size >= width - 1:
        return h[: max(width - 1, 0)].copy()
    if h.size < 2 or not 0.0 < h[-1] < h[-2]:
        raise ValueError("a geometric extension needs two shares, the last below the first")
    ratio = h[-1] / h[-2]
    more = h[-1] * ratio ** np.arange(1, width - h.size)
    out = np.concatenate([h, more])
    if out.sum() > 1.0 + 1e-9:
        raise ValueError(
            f"extended geometrically to {width} ranks the shares sum to {out.sum():.4g} > 1"
        )
    return out
