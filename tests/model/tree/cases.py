"""Shared pieces of the tree tests: hypothesis strategies and a brute-force enumerator."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from sim.model.tree import Tree


def brute_force_pmf(tree: Tree, q: np.ndarray) -> np.ndarray:
    """P(L = d + 1), d = 0..max_depth, by enumerating the target's rank at every depth.

    Independent of the path-product formula: every sequence (r_1, ..., r_D) with r_d in
    0..W-1 or "none" (W) has probability prod_d P(r_d) (none: 1 - sum of the row), and the
    cycle accepts drafts while the drawn rank names a child of the node reached so far.
    """
    depth, width = tree.max_depth, q.shape[1]
    pmf = np.zeros(depth + 1)
    kids = tree.child_lists
    for seq in itertools.product(range(width + 1), repeat=depth):
        p, node, accepted, walking = 1.0, 0, 0, True
        for d, r in enumerate(seq):
            p *= q[d, r] if r < width else 1.0 - q[d].sum()
            if walking:
                child = kids[node][r] if r < len(kids[node]) else -1
                if child < 0:
                    walking = False
                else:
                    node, accepted = child, accepted + 1
        pmf[accepted] += p
    return pmf


@st.composite
def rank_rates(draw, depth: int, width: int, decreasing: bool = False) -> np.ndarray:
    """A (depth, width) rank-rate matrix with rows summing to at most 1."""
    rows = []
    for _ in range(depth):
        raw = draw(st.lists(st.floats(0.0, 1.0), min_size=width + 1, max_size=width + 1))
        total = sum(raw) or 1.0
        row = np.array(raw[:width]) / total
        if decreasing:
            row = np.sort(row)[::-1]
        rows.append(row)
    return np.array(rows)


@st.composite
def trees(draw, max_nodes: int = 8, max_width: int = 3) -> Tree:
    """A random tree: each new node picks an earlier node and a free rank there."""
    paths: list[tuple[int, ...]] = [()]
    for _ in range(draw(st.integers(0, max_nodes))):
        parent = draw(st.sampled_from(paths))
        taken = {p[-1] for p in paths if len(p) == len(parent) + 1 and p[:-1] == parent}
        free = [r for r in range(max_width) if r not in taken]
        if free:
            paths.append((*parent, draw(st.sampled_from(free))))
    return Tree.from_rank_paths(paths[1:])


@st.composite
def tree_with_rates(draw, dominant: bool = False) -> tuple[Tree, np.ndarray]:
    """A random tree (rank-dominant if asked) and rank rates covering it."""
    strategy = trees(max_width=3)
    tree = draw(strategy.filter(lambda t: t.rank_dominant()) if dominant else strategy)
    return tree, draw(rank_rates(max(tree.max_depth, 1), max(tree.width, 1)))


@st.composite
def rising(draw, q: np.ndarray) -> np.ndarray:
    """Rank rates entrywise >= ``q`` with rows still summing to at most 1.

    A row of ``q`` that sums to 1 can exceed it by rounding (1 - sum = -2.2e-16), which
    would push its zero entries below 0: the room left is taken as at least 0.
    """
    bump = draw(rank_rates(*q.shape))
    room = np.maximum(1.0 - q.sum(axis=1, keepdims=True), 0.0)
    return q + bump * room
