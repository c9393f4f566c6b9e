"""A tree's accept length in rank-rate form: which top-1 rate explains it, under a stated
shape, and what reading it as a chain's would claim instead.

Given an accept length measured with SGLang's (num_steps, topk, num_draft_tokens), the
conversion finds the top-1 rate x (flat over depth) at which SGLang's tree, built by a
calibrated drafter (sim/model/tree/build.py), has E[L] equal to it, with ranks 2..topk by the
residual shares of a rank profile (sim/model/tree/rates.py). The chain-equivalent
per-position rates (the law of L as a chain's) and the alpha a chain of num_steps drafts
would need for the same accept length are reported beside: a tree's accept length read as
a chain's overstates the top-1 rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.closed_forms import alpha_for_accept_length
from sim.model.tree.build import candidate_count
from sim.model.tree.pool import beam_pool
from sim.model.tree.required import RankShape, accept_length, required_top1
from sim.model.tree.theory import chain_equivalent_rates

__all__ = ["TreeForms", "from_tree_accept_length"]


@dataclass(frozen=True, slots=True)
class TreeForms:
    """A tree accept length converted: top-1 rate, rank rates at depth 1 (W,), the tree's
    drafts per depth, its chain-equivalent rates (depth,), the chain alpha for the same
    accept length at num_steps, and the assumption made."""

    num_steps: int
    topk: int
    num_draft_tokens: int
    accept_length: float
    top1: float
    rank_rates: np.ndarray
    drafts_per_depth: list[int]
    chain_equivalent: np.ndarray
    chain_alpha: float | None
    assumption: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "topk": self.topk,
            "num_draft_tokens": self.num_draft_tokens,
            "accept_length": self.accept_length,
            "top1": self.top1,
            "rank_rates": [float(v) for v in self.rank_rates],
            "drafts_per_depth": self.drafts_per_depth,
            "chain_equivalent_per_position": [float(v) for v in self.chain_equivalent],
            "chain_alpha_same_accept_length": self.chain_alpha,
            "assumption": self.assumption,
        }


def from_tree_accept_length(
    accept_length_value: float,
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    shares: tuple[float, ...],
    shape_name: str,
) -> TreeForms:
    """Convert a measured tree accept length (SpecsimError naming the parameter when the
    configuration is not one SGLang builds or the accept length is out of its range)."""
    if num_steps < 1 or topk < 1:
        raise SpecsimError("num_steps and topk must be >= 1", param="num_steps")
    pool = candidate_count(num_steps, topk)
    if topk > 1 and not 2 <= num_draft_tokens <= pool + 1:
        raise SpecsimError(
            f"{num_draft_tokens} must be in 2..{pool + 1} for num_steps {num_steps}, topk {topk}",
            param="num_draft_tokens",
        )
    n = num_steps + 1 if topk == 1 else num_draft_tokens
    shape = RankShape(tuple(shares[: topk - 1]))
    cfg = (num_steps, topk, n)
    top = accept_length(shape, 1.0, cfg)
    if not 1.0 <= accept_length_value <= top + 1e-12:
        raise SpecsimError(
            f"{accept_length_value} is outside [1, {top:.4g}] (SGLang's tree at top-1 rate 1)",
            param="accept_length",
        )
    x = required_top1(accept_length_value, shape, cfg)
    assert x is not None
    q = shape.rates(x, num_steps, topk)
    pool_run = beam_pool(num_steps, topk, q, q)
    tree = pool_run.tree(num_steps, n)
    return TreeForms(
        num_steps=num_steps,
        topk=topk,
        num_draft_tokens=n,
        accept_length=accept_length_value,
        top1=x,
        rank_rates=q[0],
        drafts_per_depth=[int(c) for c in tree.nodes_per_depth()[1:]],
        chain_equivalent=chain_equivalent_rates(tree, q),
        chain_alpha=alpha_for_accept_length(accept_length_value, num_steps),
        assumption=(
            "top-1 rate equal at every depth; ranks 2..topk by the residual shares of "
            f"{shape_name}; SGLang's tree built by a drafter whose scores are the rank rates"
        ),
    )
