"""The top-1 rate a tree configuration needs for a given accept length.

A rank shape ties every rank rate to one number, the top-1 rate x at depth 1 (the role
alpha plays for a chain): the top-1 rate at depth d is min(1, x g_d) (``depth_scale`` g,
g_1 = 1; flat when empty, its last entry repeating past its end) and the other ranks take
the residual shares h of sim/model/tree/rates.py. The drafter is calibrated (its scores are
the rank rates, sim/model/tree/build.py), so SGLang's tree itself changes with x.

E[L] of SGLang's tree rises with x wherever the top-1 guess is the likeliest one
(x g_d >= the rank-2 rate (1 - x g_d) h_2, i.e. x g_d >= h_2 / (1 + h_2); the tree is then
rank-dominant, see sim/model/tree/rates.py); below that E[L] is close to 1 and not always
monotone, so the search returns the lowest crossing it finds from the top: bisection inside
the bracket that a grid scan from x = 1 downwards locates.

``required_top1`` answers one configuration exactly (bisection to ``xtol``);
``required_top1_table`` answers many at once from one beam run per grid point and topk
(sim/model/tree/pool.py), by linear interpolation between grid points, and is what a search
over (num_steps, topk, num_draft_tokens) uses before refining its best configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.model.tree.acceptance import TreeAcceptance
from sim.model.tree.build import candidate_count, optimal_tree
from sim.model.tree.pool import beam_pool
from sim.model.tree.rates import residual_rank_rates
from sim.model.tree.theory import tree_accept_length

__all__ = [
    "Config",
    "RankShape",
    "max_scale",
    "required_scale",
    "required_top1",
    "required_top1_table",
]

#: (num_steps, topk, num_draft_tokens)
Config = tuple[int, int, int]

#: Grid of top-1 rates for the table: steps of 0.005, and denser towards 1 (where E[L]
#: grows fastest with deep trees).
GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 201), 1.0 - np.geomspace(1e-5, 0.1, 60)]))


@dataclass(frozen=True, slots=True)
class RankShape:
    """Residual shares h_2..h_W and top-1 multipliers by depth (g_1 = 1; () = flat)."""

    shares: tuple[float, ...]
    depth_scale: tuple[float, ...] = ()

    def top1(self, x: float, depth: int) -> np.ndarray:
        """Top-1 rates at depths 1..depth, shape (depth,)."""
        g = np.ones(depth)
        if self.depth_scale:
            listed = np.asarray(self.depth_scale, dtype=float)
            n = min(depth, listed.size)
            g[:n] = listed[:n]
            g[n:] = listed[-1]
        return np.clip(x * g, 0.0, 1.0)

    def rates(self, x: float, depth: int, width: int) -> np.ndarray:
        """Rank rates (depth, width) at top-1 rate ``x``."""
        if width - 1 > len(self.shares):
            raise ValueError(f"the rank shape has {len(self.shares) + 1} ranks, need {width}")
        h = np.asarray(self.shares[: width - 1], dtype=float)
        return residual_rank_rates(self.top1(x, depth), h)


def accept_length(shape: RankShape, x: float, config: Config, kind: str = "sglang") -> float:
    """E[L] at top-1 rate ``x`` of SGLang's tree (``kind="sglang"``) or of the best tree of
    the same depth, width and drafts (``"optimal"``)."""
    steps, topk, n = config
    q = shape.rates(x, steps, topk)
    if kind == "sglang":
        return float(beam_pool(steps, topk, q, q).accept_lengths(steps)[n - 1])
    if kind == "optimal":
        return float(tree_accept_length(optimal_tree(n - 1, steps, q), q))
    raise ValueError(f"kind is 'sglang' or 'optimal', got {kind!r}")


def lowest_crossing(f: Callable[[float], float], x_max: float, xtol: float) -> float | None:
    """Lowest x in [0, x_max] with f(x) >= 0 as found from the top: scan a coarse grid down
    from x_max to the first point below 0, then bisect that cell to ``xtol``. None when
    f(x_max) < 0. ``f`` is called once at each x it visits (each call may build a tree):
    x_max, the grid's other points downwards (distinct), then midpoints strictly inside a
    cell whose ends it has, so no x comes twice."""
    grid = x_max * np.unique(np.concatenate([GRID[:: max(1, GRID.size // 40)], [1.0]]))
    hi = float(grid[-1])
    if f(hi) < 0.0:
        return None
    lo = 0.0
    for x in grid[-2::-1]:
        if f(float(x)) < 0.0:
            lo = float(x)
            break
        hi = float(x)
    else:
        return 0.0  # reached at x = 0
    while hi - lo > xtol:
        mid = 0.5 * (lo + hi)
        if f(mid) >= 0.0:
            hi = mid
        else:
            lo = mid
    return hi


def required_top1(
    need: float, shape: RankShape, config: Config, kind: str = "sglang", xtol: float = 1e-9
) -> float | None:
    """Lowest top-1 rate x with E[L] >= ``need`` (None: unreachable even at x = 1)."""
    if need <= 1.0:
        return 0.0
    return lowest_crossing(lambda x: accept_length(shape, x, config, kind) - need, 1.0, xtol)


def max_scale(model: TreeAcceptance) -> float:
    """The largest factor on the top-1 mean rates worth trying: where the lowest positive
    mean reaches 1 (every class, every depth), or below it where a class's Beta std
    becomes too wide for its scaled means."""
    means = np.concatenate([c.mean_rates for c in model.top1.classes])
    positive = means[means > 0]
    f_max = 1.0 / float(positive.min()) if positive.size else 1.0
    if model.scaled(f_max).infeasible() is not None:
        lo = 0.0  # a Beta std too wide for means near 1: stop where it is still possible
        for _ in range(60):
            mid = 0.5 * (lo + f_max)
            lo, f_max = (mid, f_max) if model.scaled(mid).infeasible() is None else (lo, mid)
        f_max = lo
    return f_max


def required_scale(model: TreeAcceptance, need: float, xtol: float = 1e-7) -> float | None:
    """Lowest factor f on the top-1 mean rates (every class, every depth, capped at 1; the
    spread kept) at which E[L] over requests of ``model.scaled(f)`` reaches ``need``; None
    when even all-ones rates do not. The tree follows the rates (``TreeAcceptance``)."""
    if need <= 1.0:
        return 0.0
    f_max = max_scale(model)
    return lowest_crossing(
        lambda f: model.scaled(f).mean_accept_length() - need, f_max, xtol * f_max
    )


def required_top1_table(
    needs: Mapping[Config, float], shape: RankShape, grid: np.ndarray = GRID
) -> dict[Config, float | None]:
    """Required top-1 rate of every configuration in ``needs`` (its accept length needed),
    by linear interpolation on ``grid``; None where x = 1 does not reach it."""
    out: dict[Config, float | None] = {}
    by_topk: dict[int, list[Config]] = {}
    for cfg in needs:
        steps, topk, n = cfg
        if steps < 1 or topk < 1 or not 2 <= n <= candidate_count(steps, topk) + 1:
            raise ValueError(
                f"(num_steps, topk, num_draft_tokens) = {cfg} is not a tree SGLang builds"
            )
        by_topk.setdefault(topk, []).append(cfg)
    for topk, cfgs in by_topk.items():
        steps_max = max(c[0] for c in cfgs)
        values = np.empty((grid.size, len(cfgs)))
        for i, x in enumerate(grid):
            q = shape.rates(float(x), steps_max, topk)
            pool = beam_pool(steps_max, topk, q, q)
            per_steps = {s: pool.accept_lengths(s) for s in {c[0] for c in cfgs}}
            values[i] = [per_steps[s][n - 1] for s, _, n in cfgs]
        for j, cfg in enumerate(cfgs):
            out[cfg] = _interpolate(grid, values[:, j], needs[cfg])
    return out


def _interpolate(grid: np.ndarray, values: np.ndarray, need: float) -> float | None:
    if need <= 1.0:
        return 0.0
    if values[-1] < need:
        return None
    below = np.flatnonzero(values < need)
    if below.size == 0:
        return 0.0
    i = int(below[-1])  # last grid point below: the crossing from the top lies after it
    x0, x1, v0, v1 = grid[i], grid[i + 1], values[i], values[i + 1]
    return float(x0 + (need - v0) * (x1 - x0) / (v1 - v0))
