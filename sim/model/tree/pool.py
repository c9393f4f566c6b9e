"""SGLang's candidate list as arrays: one beam run serves every num_steps and
num_draft_tokens at once.

The beams SGLang keeps at step i do not depend on how many steps follow, nor on
num_draft_tokens (sim/model/tree/build.py), so one run of ``beam_pool`` to depth S holds the
candidates of every num_steps <= S: those of depth <= num_steps. SGLang then verifies the
num_draft_tokens - 1 best of them by score, so for a profile of drafter scores and rank
rates, E[L] for every num_draft_tokens is one cumulative sum over the candidates in
selection order (``accept_lengths``). This is what makes the search over (num_steps, topk,
num_draft_tokens) cheap; ``build.beam_tree`` is the plain reference implementation
(per-beam probabilities), and the two agree node for node (tests/model/tree/test_pool.py).

Order. Candidates are stored by depth, and within a depth in lexicographic order of their
rank paths (beams are kept in that order, and each expands into ranks 0..topk-1), so a
stable sort on descending score breaks ties towards shallower, then lexicographically lower
nodes, the rule of build.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sim.model.tree import Tree
from sim.model.tree.theory import check_rank_rates

__all__ = ["BeamPool", "beam_pool"]


@dataclass(frozen=True, slots=True)
class BeamPool:
    """Candidates of one beam run, shape (P,) each: ``depth`` (1..), ``parent`` (pool index,
    -1 for the root), ``rank``, drafter ``score`` (product of drafter probabilities) and
    ``prob`` (path product of rank rates: P(accepted))."""

    topk: int
    depth: np.ndarray
    parent: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    prob: np.ndarray

    @property
    def num_steps(self) -> int:
        return int(self.depth[-1])

    def candidates(self, num_steps: int) -> int:
        """Candidates of ``num_steps``: topk + (num_steps - 1) topk^2."""
        return self.topk + (num_steps - 1) * self.topk**2

    def selection(self, num_steps: int) -> np.ndarray:
        """Pool indices of ``num_steps``'s candidates, best first (SGLang's order)."""
        if not 1 <= num_steps <= self.num_steps:
            raise ValueError(f"num_steps must be in 1..{self.num_steps}, got {num_steps}")
        n = self.candidates(num_steps)
        return np.argsort(-self.score[:n], kind="stable")

    def accept_lengths(self, num_steps: int) -> np.ndarray:
        """E[L] of SGLang's tree with num_draft_tokens - 1 = 0..P' drafts, shape (P' + 1,),
        P' = ``candidates(num_steps)``; entry j is num_draft_tokens = j + 1."""
        probs = self.prob[self.selection(num_steps)]
        return 1.0 + np.concatenate([[0.0], np.cumsum(probs)])

    def tree(self, num_steps: int, num_draft_tokens: int) -> Tree:
        """The tree SGLang verifies for (num_steps, topk, num_draft_tokens)."""
        n = self.candidates(num_steps)
        if not 1 <= num_draft_tokens - 1 <= n:
            raise ValueError(
                f"num_draft_tokens - 1 = {num_draft_tokens - 1} must be in 1..{n} "
                f"(the candidates of num_steps {num_steps} at topk {self.topk})"
            )
        chosen = self.selection(num_steps)[: num_draft_tokens - 1]
        paths: dict[int, tuple[int, ...]] = {-1: ()}
        for i in sorted(chosen.tolist()):  # parents come before children in the pool
            paths[i] = (*paths[int(self.parent[i])], int(self.rank[i]))
        del paths[-1]
        return Tree.from_rank_paths(paths.values())


def beam_pool(num_steps: int, topk: int, scores: ArrayLike, rates: ArrayLike) -> BeamPool:
    """SGLang's candidates to depth ``num_steps`` when the drafter's probability of its
    rank-r guess at depth d is ``scores[d - 1, r]`` at every node and the acceptance rates
    are ``rates[d - 1, r]`` (both shape (>= num_steps, >= topk))."""
    if num_steps < 1 or topk < 1:
        raise ValueError(f"num_steps and topk must be >= 1, got {num_steps} and {topk}")
    s = check_rank_rates(scores)
    q = check_rank_rates(rates)
    for name, a in (("scores", s), ("rates", q)):
        if a.ndim != 2 or a.shape[0] < num_steps or a.shape[1] < topk:
            raise ValueError(f"{name} need shape (>= {num_steps}, >= {topk}), got {a.shape}")
    ranks = np.arange(topk)
    depth = [np.ones(topk, dtype=np.int64)]
    parent = [np.full(topk, -1, dtype=np.int64)]
    rank = [ranks]
    score = [s[0, :topk].copy()]
    prob = [q[0, :topk].copy()]
    beams = np.arange(topk)  # pool indices of the beams, in pool (lexicographic) order
    offset = topk
    for step in range(1, num_steps):
        b_score = np.concatenate(score)[beams]
        b_prob = np.concatenate(prob)[beams]
        e_score = (b_score[:, None] * s[step, :topk][None, :]).ravel()
        depth.append(np.full(topk * topk, step + 1, dtype=np.int64))
        parent.append(np.repeat(beams, topk))
        rank.append(np.tile(ranks, topk))
        score.append(e_score)
        prob.append((b_prob[:, None] * q[step, :topk][None, :]).ravel())
        keep = np.sort(np.argsort(-e_score, kind="stable")[:topk])  # best topk, pool order
        beams = offset + keep
        offset += topk * topk
    return BeamPool(
        topk=topk,
        depth=np.concatenate(depth),
        parent=np.concatenate(parent),
        rank=np.concatenate(rank),
        score=np.concatenate(score),
        prob=np.concatenate(prob),
    )
