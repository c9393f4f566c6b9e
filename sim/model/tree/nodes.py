"""A draft tree as frozen data: node 0 is the root (the last accepted token), every other
node is one draft token, identified by its parent and its rank among its siblings.

Vocabulary. The drafter ranks the candidate next tokens at a node by its own probability;
the child of rank r (r = 0 for the drafter's top-1, 1 for its second guess, ...) is the
r-th best guess. A chain of k drafts is the tree whose nodes all have rank 0 (SGLang with
``--speculative-eagle-topk 1``).

Arrays (all read-only, length n = 1 + drafts): ``parent`` (root: -1; a parent always comes
before its children), ``rank`` (root: -1), ``depth`` (root: 0). ``children`` is the (n, W + 1)
child table, W = ``width`` (1 + the largest rank): ``children[u, r]`` is the child of
rank r of node u or -1, and the extra last column is -1 (no match: "rank W").

Trees compare and hash by their node lists; ``from_rank_paths`` builds the canonical order
(by depth, then by rank path), so two trees holding the same nodes are equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["RankPath", "Tree"]

#: A node named by the ranks along its path from the root: () is the root, (0, 1) the
#: second-ranked child of the root's top-1 child.
RankPath = tuple[int, ...]


def _readonly(values: Iterable[int]) -> np.ndarray:
    out = np.array(list(values), dtype=np.int64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Tree:
    """A draft tree: ``parent[i]`` and ``rank[i]`` per node, node 0 the root.

    Validated: the root has parent -1 and rank -1; every other node's parent comes before
    it; ranks are >= 0; no two siblings share a rank.
    """

    parent: tuple[int, ...]
    rank: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.parent) != len(self.rank) or not self.parent:
            raise ValueError("a tree needs a root and one rank per node")
        if self.parent[0] != -1 or self.rank[0] != -1:
            raise ValueError("node 0 is the root: parent -1 and rank -1")
        seen: set[tuple[int, int]] = set()
        for i in range(1, len(self.parent)):
            p, r = self.parent[i], self.rank[i]
            if not 0 <= p < i:
                raise ValueError(f"node {i}: parent {p} must be an earlier node")
            if r < 0:
                raise ValueError(f"node {i}: rank {r} must be >= 0")
            if (p, r) in seen:
                raise ValueError(f"node {i}: node {p} already has a child of rank {r}")
            seen.add((p, r))

    # ----- constructors

    @classmethod
    def chain(cls, drafts: int) -> Tree:
        """The chain of ``drafts`` top-1 drafts (topk = 1)."""
        if drafts < 0:
            raise ValueError(f"a chain has >= 0 drafts, got {drafts}")
        return cls(tuple(range(-1, drafts)), (-1,) + (0,) * drafts)

    @classmethod
    def from_rank_paths(cls, paths: Iterable[RankPath]) -> Tree:
        """The tree holding the root and ``paths`` (every prefix of a path must be given),
        nodes ordered by depth, then by rank path."""
        nodes = sorted({tuple(p) for p in paths} | {()}, key=lambda p: (len(p), p))
        index = {p: i for i, p in enumerate(nodes)}
        parent, rank = [-1], [-1]
        for p in nodes[1:]:
            if p[:-1] not in index:
                raise ValueError(f"rank path {p} is given without its parent {p[:-1]}")
            if p[-1] < 0:
                raise ValueError(f"rank path {p} has a negative rank")
            parent.append(index[p[:-1]])
            rank.append(p[-1])
        return cls(tuple(parent), tuple(rank))

    # ----- shape

    @property
    def size(self) -> int:
        """Nodes including the root: the tokens one verify pass covers (num_draft_tokens)."""
        return len(self.parent)

    @property
    def drafts(self) -> int:
        """Draft tokens (nodes other than the root)."""
        return len(self.parent) - 1

    @cached_property
    def depth(self) -> np.ndarray:
        """Depth per node, shape (n,); the root has depth 0."""
        d = [0] * self.size
        for i in range(1, self.size):
            d[i] = d[self.parent[i]] + 1
        return _readonly(d)

    @property
    def max_depth(self) -> int:
        """Deepest draft: the most drafts one cycle can accept."""
        return int(self.depth.max())

    @property
    def width(self) -> int:
        """1 + the largest rank used (1 for a chain, 0 for the bare root)."""
        return max(self.rank) + 1

    @cached_property
    def parents(self) -> np.ndarray:
        """``parent`` as a read-only array, shape (n,)."""
        return _readonly(self.parent)

    @cached_property
    def ranks(self) -> np.ndarray:
        """``rank`` as a read-only array, shape (n,)."""
        return _readonly(self.rank)

    @cached_property
    def children(self) -> np.ndarray:
        """Child table, shape (n, width + 1): child of rank r of node u, or -1."""
        table = np.full((self.size, self.width + 1), -1, dtype=np.int64)
        for i in range(1, self.size):
            table[self.parent[i], self.rank[i]] = i
        table.setflags(write=False)
        return table

    @cached_property
    def child_lists(self) -> tuple[tuple[int, ...], ...]:
        """``children`` as plain Python tuples (row u: child of rank r or -1), for the
        sequential sampler."""
        return tuple(tuple(int(c) for c in row[:-1]) for row in self.children)

    @cached_property
    def levels(self) -> tuple[np.ndarray, ...]:
        """Node indices at depth 1, 2, ..., max_depth (each a read-only int array)."""
        return tuple(
            _readonly(np.flatnonzero(self.depth == d)) for d in range(1, self.max_depth + 1)
        )

    def nodes_per_depth(self) -> np.ndarray:
        """Nodes at depth 0..max_depth, shape (max_depth + 1,)."""
        return np.bincount(self.depth, minlength=self.max_depth + 1)

    def rank_paths(self) -> tuple[RankPath, ...]:
        """The rank path of every node, in node order (the root's is ())."""
        paths: list[RankPath] = [()]
        for i in range(1, self.size):
            paths.append((*paths[self.parent[i]], self.rank[i]))
        return tuple(paths)

    def is_chain(self) -> bool:
        return all(r == 0 for r in self.rank[1:]) and self.parent == tuple(range(-1, self.drafts))

    def rank_dominant(self) -> bool:
        """True when, at every node, the child of a lower rank exists whenever a higher-rank
        sibling does and its subtree contains that sibling's subtree (as rank paths).

        This is what makes the per-depth categorical sampler monotone under common random
        numbers (sim/model/tree/samplers.py); the optimal and SGLang trees built from rank
        rates that do not increase with rank have it (sim/model/tree/build.py).
        """
        kids = self.child_lists

        def embeds(big: int, small: int) -> bool:
            return all(
                c < 0 or (kids[big][r] >= 0 and embeds(kids[big][r], c))
                for r, c in enumerate(kids[small])
            )

        for row in kids:
            present = [c for c in row if c >= 0]
            if list(row[: len(present)]) != present:
                return False  # a gap: some rank is missing below a present one
            for lo, hi in itertools.pairwise(present):
                if not embeds(lo, hi):
                    return False
        return True
