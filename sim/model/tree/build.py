"""Two trees for one draft budget: the one SGLang's EAGLE worker builds, and the best one.

SGLang's construction (sgl-project/sglang python/sglang/srt/speculative/eagle_worker.py,
``draft_forward``; eagle_utils.py / spec_utils.py, ``select_top_k_tokens``;
build_eagle_tree.py, ``build_tree_kernel_efficient_preprocess``):

* step 0 takes the topk candidates of the root (from the draft extend of the last cycle);
  they are the first topk beams, with score = the drafter's probability;
* each later step i = 1..num_steps-1 runs one drafter pass over the topk beams, expands
  every beam into its topk children with score = beam score x child probability (all
  topk^2 of them enter the candidate list), and keeps the topk best as the next beams;
* after num_steps steps the num_draft_tokens - 1 best candidates of the whole list
  (topk + (num_steps - 1) topk^2 of them) by score, plus the root, are verified.

So the tree has at most topk nodes with children per depth, depth <= num_steps, and
num_draft_tokens - 1 drafts; ``torch.topk`` needs num_draft_tokens - 1 <= the candidate
count. A child's score never exceeds its parent's (probabilities are <= 1), so the chosen
set is closed under parents (ties broken towards shallower, then lower-ranked nodes).

The drafter's scores under the rank model. SGLang ranks by the drafter's own probabilities,
which the rank model does not carry. ``scores`` gives the drafter's expected probability of
its rank-r guess at each depth; by default it is the rank rates q themselves: a calibrated
drafter, whose confidence equals its acceptance rate, which EAGLE-2 measured to hold
approximately for EAGLE drafters (Li et al. 2024, "EAGLE-2: Faster Inference of Language
Models with Dynamic Draft Trees", arXiv:2406.16858, section 3 and its figure of acceptance
rate against confidence). Then a node's score is its path product, the beam construction is
a beam-limited version of the greedy below, and the tree is static: per-cycle variation of
the drafter's confidence (what makes EAGLE-2's tree "dynamic") is not modelled.

The best tree (``optimal_tree``): among trees with at most ``budget`` drafts, depth at most
``max_depth`` and ranks below ``width``, the one with the largest E[L] = 1 + sum of path
products. Exact greedy: take the ``budget`` nodes with the largest path products in the
full width-ary tree of that depth. Proof: (1) along every path the products do not
increase (each factor is <= 1), so a best-first search from the root, which only offers a
node after its parent, pops nodes in non-increasing order of product and the popped set is
closed under parents, i.e. it is a tree; (2) any tree with ``budget`` drafts is a set of
``budget`` nodes of the full tree, so its sum is at most the sum of the ``budget`` largest
products, which the greedy set attains. This is the optimum of Sequoia's dynamic program
over (budget, depth) under the same positional acceptance model (Chen et al. 2024,
"Sequoia", arXiv:2402.12374; Infini-AI-Lab/Sequoia tree_search.py), obtained without it.
Ties are broken towards shallower, then lexicographically lower rank paths, so that with
rates that do not increase with rank the tree is rank-dominant (sim/model/tree/nodes.py).

SGLang's tree is one of the candidates of the optimum (depth <= num_steps, ranks < topk,
num_draft_tokens - 1 drafts), so E[L] of SGLang's tree <= E[L] of the best tree of the same
budget, depth and width; they differ because SGLang expands only topk beams per depth.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from sim.model.tree import RankPath, Tree
from sim.model.tree.pool import beam_pool
from sim.model.tree.theory import check_rank_rates

__all__ = ["beam_tree", "candidate_count", "optimal_tree", "sglang_tree"]


def candidate_count(num_steps: int, topk: int) -> int:
    """Candidates SGLang scores: topk at step 0 plus topk^2 per later step."""
    return topk + (num_steps - 1) * topk * topk


def _scores(scores: ArrayLike, depth: int, width: int) -> np.ndarray:
    s = check_rank_rates(scores)
    if s.ndim != 2 or s.shape[0] < depth or s.shape[1] < width:
        raise ValueError(f"scores need shape (>= {depth}, >= {width}) (depth, rank), got {s.shape}")
    return s[:depth, :width]


def _key(score: float, path: RankPath) -> tuple[float, int, RankPath]:
    """Sort key: larger score first, then shallower, then lower rank path."""
    return (-score, len(path), path)


def beam_tree(
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    child_probs: Callable[[RankPath], Sequence[float]],
) -> Tree:
    """SGLang's beam construction for a drafter whose top-k probabilities at the node with
    rank path p are ``child_probs(p)`` (topk values, best first). ``topk = 1`` gives the
    chain of num_steps drafts (with num_draft_tokens = num_steps + 1, SGLang's own
    adjustment)."""
    if num_steps < 1 or topk < 1:
        raise ValueError(f"num_steps and topk must be >= 1, got {num_steps} and {topk}")
    pool_size = candidate_count(num_steps, topk)
    if not 1 <= num_draft_tokens - 1 <= pool_size:
        raise ValueError(
            f"num_draft_tokens - 1 = {num_draft_tokens - 1} must be in 1..{pool_size} "
            f"(the candidates of num_steps {num_steps} at topk {topk})"
        )

    def children(score: float, path: RankPath) -> list[tuple[float, RankPath]]:
        probs = list(child_probs(path))[:topk]
        if len(probs) < topk:
            raise ValueError(f"child_probs{path} gave {len(probs)} probabilities, need {topk}")
        return [(score * float(p), (*path, r)) for r, p in enumerate(probs)]

    beams = children(1.0, ())
    pool = list(beams)
    for _ in range(1, num_steps):
        expanded = [c for score, path in beams for c in children(score, path)]
        pool.extend(expanded)
        beams = sorted(expanded, key=lambda c: _key(*c))[:topk]
    chosen = sorted(pool, key=lambda c: _key(*c))[: num_draft_tokens - 1]
    return Tree.from_rank_paths(path for _, path in chosen)


def sglang_tree(num_steps: int, topk: int, num_draft_tokens: int, scores: ArrayLike) -> Tree:
    """The tree SGLang verifies when the drafter's probability of its rank-r guess at depth
    d is ``scores[d - 1, r]`` at every node, shape (>= num_steps, >= topk) (the default
    choice is the rank rates themselves, see the module docstring). Built by the array
    form of the beam run (sim/model/tree/pool.py), which equals ``beam_tree`` with
    ``child_probs = lambda path: scores[len(path)]``."""
    pool = beam_pool(num_steps, topk, scores, scores)
    return pool.tree(num_steps, num_draft_tokens)


def optimal_tree(budget: int, max_depth: int, rates: ArrayLike, width: int | None = None) -> Tree:
    """The tree of at most ``budget`` drafts, depth <= ``max_depth`` and ranks < ``width``
    (default: the columns of ``rates``) with the largest E[L] under rank rates ``rates``
    of shape (>= max_depth, >= width): the exact greedy of the module docstring. Nodes of
    path product 0 are never added (they add nothing), so the tree may hold fewer drafts."""
    if budget < 0 or max_depth < 0:
        raise ValueError(f"budget and max_depth must be >= 0, got {budget} and {max_depth}")
    a = check_rank_rates(rates)
    if a.ndim != 2:
        raise ValueError(f"rates need shape (depth, rank), got {a.shape}")
    w = a.shape[1] if width is None else width
    if max_depth == 0 or budget == 0 or w == 0:
        return Tree.chain(0)
    q = _scores(a, max_depth, w)
    heap: list[tuple[float, int, RankPath]] = [_key(float(q[0, r]), (r,)) for r in range(w)]
    heapq.heapify(heap)
    chosen: list[RankPath] = []
    while heap and len(chosen) < budget:
        neg, _, path = heapq.heappop(heap)
        if -neg <= 0.0:
            break
        chosen.append(path)
        if len(path) < max_depth:
            for r in range(w):
                heapq.heappush(heap, _key(-neg * float(q[len(path), r]), (*path, r)))
    return Tree.from_rank_paths(chosen)
