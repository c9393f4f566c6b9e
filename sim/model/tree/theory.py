"""Closed forms for a draft tree under rank-wise acceptance.

The rank model. Given that the target accepted the token at node u (or u is the root), the
target's next token is the drafter's rank-r guess at u with probability ``q[d - 1, r]``,
d = depth(u) + 1 the depth of the children, r = 0..W-1; with probability
1 - sum_r q[d - 1, r] it is none of the drafter's top W. These events are disjoint (the
target emits one token), so at most one child of each accepted node is accepted and

    P(node v accepted) = prod over the path root -> v of q[depth - 1, rank]   ("path product")

(Sequoia's positional acceptance model, Chen et al. 2024, arXiv:2402.12374). SGLang's two
tree verifiers both follow it exactly (sgl-project/sglang sgl-kernel/csrc/speculative/):
greedy ``VerifyTreeGreedy`` (eagle_utils.cu) accepts the child whose token is the target's
argmax, so q_r = P(argmax = rank-r guess); the sampling verifier
``TreeSpeculativeSamplingTargetOnly`` (speculative_sampling.cuh) draws ONE coin per level
and accepts the first sibling (in rank order) at which the coin falls below the running
sum of the target's probabilities, so q_r = E[p_target(rank-r guess)] under the
tempered, top-k/top-p renormalised target. The samplers (sim/model/tree/samplers.py) are
that kernel's inverse-cdf walk. Other tree samplers do not fit the model: SpecInfer's
multi-step speculative sampling (Miao et al. 2024) and Sequoia's sampling without
replacement test each sibling against a residual distribution reshaped by the rejected
ones. Under any verifier, q should be measured at the temperature served.

The cycle emits L = accepted drafts + 1 tokens (the target's correction or bonus token), so

    E[L] = 1 + sum over non-root nodes of the path product,
    P(L >= d + 1) = S_d = sum of the path products of the depth-d nodes  (S_0 = 1),
    P(L = d + 1) = S_d - S_(d+1).

For a chain (every rank 0) S_d = q_1 ... q_d, the chain formulas of
sim/model/closed_forms.py; and any tree's L has the law of a chain with conditional rates
S_d / S_(d-1) (``chain_equivalent_rates``), which is how the chain machinery (renewal,
per-request heterogeneity, the fast engine's inverse-cdf draw) carries over to trees exactly.

Shapes. ``q`` is (..., D, W): D >= the tree's depth rows (depth 1..D), W >= its width
columns, leading axes for requests. 0 <= q <= 1 and every row sums to at most 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from sim.model.tree import Tree

__all__ = [
    "chain_equivalent_rates",
    "check_rank_rates",
    "depth_survival",
    "node_probabilities",
    "tree_accept_length",
    "tree_accept_pmf",
]

#: Rows of q may exceed 1 by this much (round-off in user-given profiles).
SUM_TOLERANCE = 1e-9


def check_rank_rates(q: ArrayLike, tree: Tree | None = None) -> np.ndarray:
    """``q`` as a float array of shape (..., D, W), validated (ValueError otherwise):
    entries in [0, 1], rows summing to at most 1, and, given ``tree``, D >= its depth and
    W >= its width."""
    a = np.asarray(q, dtype=float)
    if a.ndim < 2:
        raise ValueError(f"rank rates have shape (..., depth, ranks), got shape {a.shape}")
    if np.any(~np.isfinite(a)) or np.any(a < 0.0) or np.any(a > 1.0):
        raise ValueError("rank rates must lie in [0, 1]")
    if np.any(a.sum(axis=-1) > 1.0 + SUM_TOLERANCE):
        raise ValueError("rank rates at one depth sum above 1 (the ranks are disjoint events)")
    if tree is not None:
        if a.shape[-2] < tree.max_depth:
            raise ValueError(f"rank rates give {a.shape[-2]} depths; the tree has {tree.max_depth}")
        if a.shape[-1] < tree.width:
            raise ValueError(f"rank rates give {a.shape[-1]} ranks; the tree uses {tree.width}")
    return a


def node_probabilities(tree: Tree, q: ArrayLike) -> np.ndarray:
    """P(node accepted) for every node, shape (..., n): path products (the root's is 1)."""
    a = check_rank_rates(q, tree)
    lead = a.shape[:-2]
    out = np.empty((*lead, tree.size))
    out[..., 0] = 1.0
    for d, idx in enumerate(tree.levels, start=1):
        out[..., idx] = out[..., tree.parents[idx]] * a[..., d - 1, tree.ranks[idx]]
    return out


def depth_survival(tree: Tree, q: ArrayLike) -> np.ndarray:
    """S_d = P(L >= d + 1) for d = 0..max_depth, shape (..., max_depth + 1); S_0 = 1."""
    probs = node_probabilities(tree, q)
    lead = probs.shape[:-1]
    out = np.zeros((*lead, tree.max_depth + 1))
    np.add.at(np.moveaxis(out, -1, 0), tree.depth, np.moveaxis(probs, -1, 0))
    return out


def tree_accept_pmf(tree: Tree, q: ArrayLike) -> np.ndarray:
    """P(L = d + 1) for d = 0..max_depth, shape (..., max_depth + 1)."""
    s = depth_survival(tree, q)
    nxt = np.concatenate([s[..., 1:], np.zeros((*s.shape[:-1], 1))], axis=-1)
    return np.maximum(s - nxt, 0.0)


def tree_accept_length(tree: Tree, q: ArrayLike) -> np.ndarray | float:
    """E[L] = 1 + sum of the non-root path products, shape (...) (a float for one q)."""
    # 1 + sum of the drafts' products, summed as sim/model/closed_forms.py sums a chain's cumulative
    # rates, so that a chain gives the identical float
    total = 1.0 + node_probabilities(tree, q)[..., 1:].sum(axis=-1)
    return float(total) if total.ndim == 0 else total


def chain_equivalent_rates(tree: Tree, q: ArrayLike) -> np.ndarray:
    """Conditional rates a_d = S_d / S_(d-1), d = 1..max_depth, shape (..., max_depth),
    of the chain whose L has the tree's law (0 once S_(d-1) = 0)."""
    s = depth_survival(tree, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(s[..., :-1] > 0.0, s[..., 1:] / s[..., :-1], 0.0)
    return np.clip(a, 0.0, 1.0)
