"""Sampling a tree cycle: one categorical draw per depth (which ranked child, if any, is the
target's token), walking down from the root while the drawn child is in the tree.

At depth d (children of the node accepted last) the rank is drawn by inverse cdf from one
uniform u_d: rank r when Q_(r-1) <= u_d < Q_r, Q_r = q[d-1, 0] + ... + q[d-1, r], and "no
match" (rank W) when u_d >= Q_(W-1). The walk stops at no match or when the node has no
child of the drawn rank; L = 1 + the accepted drafts. This is the rank model of
sim/model/tree/theory.py step by step, so the law of L is exactly ``tree_accept_pmf``.

Monotone under common random numbers: if q' >= q entrywise and the tree is rank-dominant
(``Tree.rank_dominant``; the optimal and SGLang trees built from rates that do not increase
with rank are), then with the same uniforms L(q') >= L(q). Proof: Q'_r >= Q_r, so at every
depth the rank drawn under q' is at most the one drawn under q; by induction the node
reached under q' has a subtree containing (as rank paths) the subtree of the node reached
under q (the lower-ranked sibling's subtree contains the higher one's, and a subtree
embedding maps children of a rank to children of the same rank), so the walk under q'
continues at least as long. Without rank dominance it can fail: raising q_1 can turn a
draw that matched a rank-2 child with a deep subtree into one matching a rank-1 leaf.

``tree_lengths_from_uniforms`` is the vectorized form (NumPy over cycles);
``tree_length_sequential`` the per-depth form the SimPy engine runs as the protocol does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from sim.model.tree import Tree
from sim.model.tree.theory import check_rank_rates

__all__ = ["sample_tree_lengths", "tree_length_sequential", "tree_lengths_from_uniforms"]


def tree_lengths_from_uniforms(u: np.ndarray, tree: Tree, q: ArrayLike) -> np.ndarray:
    """Tokens per cycle L for uniforms ``u`` of shape (n, D), D >= the tree's depth (one
    per depth; uniforms past the stopping depth are ignored), and rank rates ``q`` of shape
    (D', W) shared by all cycles or (n, D', W) per cycle. Returns int64 of shape (n,),
    1 <= L <= max_depth + 1."""
    a = check_rank_rates(q, tree)
    u = np.asarray(u, dtype=float)
    n = u.shape[0]
    depth, width = tree.max_depth, tree.width
    if u.ndim != 2 or u.shape[1] < depth:
        raise ValueError(f"uniforms need shape (n, >= {depth}), got {u.shape}")
    cum = np.cumsum(a[..., :depth, :width], axis=-1)  # (D, W) or (n, D, W)
    node = np.zeros(n, dtype=np.int64)
    length = np.ones(n, dtype=np.int64)
    table = tree.children
    for d in range(depth):
        bounds = cum[d] if cum.ndim == 2 else cum[:, d, :]  # (W,) or (n, W)
        r = (u[:, d, None] >= bounds).sum(axis=-1)  # 0..W; W: no match
        alive = node >= 0
        node = np.where(alive, table[np.maximum(node, 0), r], -1)
        length += node >= 0
        if not (node >= 0).any():
            break
    return length


def sample_tree_lengths(rng: np.random.Generator, tree: Tree, q: ArrayLike, n: int) -> np.ndarray:
    """``n`` cycles' L (int64, shape (n,)), drawing (n, max_depth) uniforms from ``rng``."""
    u = rng.random((n, max(tree.max_depth, 1)))
    return tree_lengths_from_uniforms(u, tree, q)


def tree_length_sequential(
    u: Sequence[float], child_lists: Sequence[Sequence[int]], q_rows: Sequence[Sequence[float]]
) -> int:
    """L of one cycle in plain Python: ``u`` one uniform per depth, ``child_lists`` the
    tree's ``Tree.child_lists``, ``q_rows[d]`` the rank rates at depth d + 1."""
    node, length = 0, 1
    for ud, row in zip(u, q_rows, strict=False):
        kids = child_lists[node]
        total, nxt = 0.0, -1
        for r, qr in enumerate(row):
            total += qr
            if ud < total:
                nxt = kids[r] if r < len(kids) else -1
                break
        if nxt < 0:
            return length
        node, length = nxt, length + 1
    return length
