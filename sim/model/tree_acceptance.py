"""Tree acceptance over a population of requests: the existing classes and Beta spread on
the top-1 rate, the residual-share rule for the other ranks, one fixed tree.

A request draws its top-1 rates per depth exactly as a chain request draws its conditional
rates (``AcceptanceModel.sample_requests``: a class, then one Beta quantile per request,
comonotone across depths); its rank rates are ``residual_rank_rates(top-1, shares)``
(sim/model/tree_rates.py). Every request verifies the same tree, built once from the
population's rates (the drafter's average confidence; sim/model/tree_build.py): the model's
tree is static, SGLang's is rebuilt each cycle from that cycle's drafter scores.

Because L of a tree cycle has the law of a chain with conditional rates S_d / S_(d-1)
(sim/model/tree_theory.py), every chain-level expectation carries over with S in place of
the chain's cumulative rates: per-request E[pmf], E[AL], and the pooled-cycle pmf
E[pmf / AL] / E[1 / AL] (see sim/acceptance.py for why cycles pool that way). The
expectations over the Beta quantile use the same graded quadrature (``RateClass.expect``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.model.acceptance import AcceptanceModel, RateClass
from sim.model.tree import Tree
from sim.model.tree_rates import residual_rank_rates
from sim.model.tree_theory import chain_equivalent_rates, depth_survival

__all__ = ["TreeAcceptance"]


@dataclass(frozen=True)
class TreeAcceptance:
    """Requests' top-1 rates (``top1``, whose ``num_steps`` >= the tree's depth), residual
    shares h_2..h_W (``shares``, shape (W - 1,), W >= the tree's width) and the tree."""

    tree: Tree
    top1: AcceptanceModel
    shares: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.top1.num_steps < self.tree.max_depth:
            raise ValueError(
                f"top-1 rates cover {self.top1.num_steps} depths; the tree has "
                f"{self.tree.max_depth}"
            )
        if len(self.shares) + 1 < self.tree.width:
            raise ValueError(
                f"{len(self.shares) + 1} ranks have rates; the tree uses {self.tree.width}"
            )

    @property
    def depth(self) -> int:
        return self.tree.max_depth

    @property
    def heterogeneous(self) -> bool:
        return self.top1.heterogeneous

    def rank_rates(self, top1: np.ndarray) -> np.ndarray:
        """q of shape (n, depth, W) from top-1 rates of shape (n, >= depth)."""
        return residual_rank_rates(np.asarray(top1)[:, : self.depth], np.asarray(self.shares))

    def _survival(self, top1: np.ndarray) -> np.ndarray:
        return depth_survival(self.tree, self.rank_rates(top1))  # (n, depth + 1)

    def _expect(self, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """E over requests of fn(top-1 rates (n, k)) -> (n, ...)."""
        w = self.top1.weights
        parts = [c.expect(fn) for c in self.top1.classes]
        return sum(wi * p for wi, p in zip(w, parts, strict=True))

    # ----- per request

    def expected_survival(self) -> np.ndarray:
        """E[S_0..S_depth] over requests, shape (depth + 1,)."""
        return self._expect(self._survival)

    def request_pmf(self) -> np.ndarray:
        """E[P(L = d + 1)] over requests, d = 0..depth, shape (depth + 1,)."""
        s = self.expected_survival()
        return s - np.concatenate([s[1:], [0.0]])

    def mean_accept_length(self) -> float:
        """E[AL] over requests."""
        return float(self.expected_survival().sum())

    def effective_rates(self) -> np.ndarray:
        """Chain rates (depth,) with the per-request expected pmf: E[S_d] / E[S_(d-1)]."""
        s = self.expected_survival()
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.clip(np.where(s[:-1] > 0, s[1:] / s[:-1], 0.0), 0.0, 1.0)

    # ----- pooled over cycles

    def cycle_pmf(self) -> np.ndarray:
        """Long-run pmf of all cycles pooled, (depth + 1,): E[pmf / AL] / E[1 / AL]."""
        if not self.heterogeneous:
            return self.request_pmf()

        def weighted(a: np.ndarray) -> np.ndarray:
            s = self._survival(a)
            pmf = s - np.concatenate([s[:, 1:], np.zeros((s.shape[0], 1))], axis=1)
            al = s.sum(axis=1)
            return np.concatenate([pmf / al[:, None], (1.0 / al)[:, None]], axis=1)

        e = self._expect(weighted)
        return e[:-1] / e[-1]

    def cycle_mean_accept_length(self) -> float:
        """Long-run tokens per cycle over all cycles pooled: 1 / E[1 / AL]."""
        return float(self.cycle_pmf() @ np.arange(1, self.depth + 2))

    # ----- sampling

    def sample_requests(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Class index (n,) and top-1 rates (n, k) of ``n`` requests (2 n uniforms, as
        ``AcceptanceModel.sample_requests``: common random numbers across rates)."""
        return self.top1.sample_requests(rng, n)

    def chain_rates(self, top1: np.ndarray) -> np.ndarray:
        """Per-request chain-equivalent rates (n, depth): the law of L as a chain's."""
        return chain_equivalent_rates(self.tree, self.rank_rates(top1))

    @staticmethod
    def single(tree: Tree, top1: np.ndarray, shares: np.ndarray) -> TreeAcceptance:
        """One class, no spread: top-1 rates (depth,) for every request."""
        rates = np.asarray(top1, dtype=float)
        model = AcceptanceModel(rates.shape[0], (RateClass("all", 1.0, rates),))
        return TreeAcceptance(tree, model, tuple(float(h) for h in shares))
