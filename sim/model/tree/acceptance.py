"""Tree acceptance over a population of requests: the chain's classes and Beta spread on
the top-1 rate, the residual-share rule for the other ranks, and the tree they verify.

A request draws its top-1 rates per depth exactly as a chain request draws its conditional
rates (``AcceptanceModel.sample_requests``: a class, then one Beta quantile per request,
comonotone across depths); its rank rates are ``residual_rank_rates(top-1, shares)``
(sim/model/tree/rates.py). Every request verifies the same tree, built once from the
population's mean rates (the drafter's average confidence) by SGLang's beam construction
(``TreeDraft``, sim/model/tree/build.py), or given as a fixed tree (static-tree engines such
as vLLM's ``speculative_token_tree``): the model's tree is static, SGLang's is rebuilt each
cycle from that cycle's drafter scores.

Because L of a tree cycle has the law of a chain with conditional rates S_d / S_(d-1)
(sim/model/tree/theory.py), every chain-level expectation carries over with S in place of
the chain's cumulative rates: per-request E[pmf], E[AL], and the pooled-cycle pmf
E[pmf / AL] / E[1 / AL] (see sim/model/acceptance.py for why cycles pool that way). The
expectations over the Beta quantile use the same graded quadrature (``RateClass.expect``).

The engines see the same interface as ``AcceptanceModel``: ``num_steps`` (here the tree's
depth: the most drafts one cycle can accept), ``sample_requests`` (top-1 rates),
``chain_rates`` (the chain-equivalent rates the fast engine's inverse-cdf draw takes) and
``sequential_length`` (the per-depth categorical walk the SimPy engine runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from sim.model.acceptance import AcceptanceModel, RateClass
from sim.model.tree import Tree
from sim.model.tree.build import optimal_tree, sglang_tree
from sim.model.tree.rates import Shares, residual_rank_rates, share_count
from sim.model.tree.samplers import tree_length_sequential
from sim.model.tree.theory import chain_equivalent_rates, depth_survival

__all__ = ["Acceptance", "OptimalDraft", "TreeAcceptance", "TreeDraft"]


@dataclass(frozen=True, slots=True)
class TreeDraft:
    """SGLang's tree configuration: (num_steps, topk, num_draft_tokens)."""

    num_steps: int
    topk: int
    num_draft_tokens: int

    def tree(self, rates: np.ndarray) -> Tree:
        """The tree SGLang builds for rank rates (num_steps, >= topk), drafter calibrated."""
        return sglang_tree(self.num_steps, self.topk, self.num_draft_tokens, rates)


@dataclass(frozen=True, slots=True)
class OptimalDraft:
    """The best tree of at most ``budget`` drafts, depth <= ``max_depth``, ranks < ``width``
    (sim/model/tree/build.py ``optimal_tree``), for the rank rates it is built at."""

    budget: int
    max_depth: int
    width: int

    @property
    def topk(self) -> int:
        return self.width

    def tree(self, rates: np.ndarray) -> Tree:
        return optimal_tree(self.budget, self.max_depth, rates, width=self.width)


@dataclass(frozen=True, slots=True)
class TreeAcceptance:
    """Requests' top-1 rates (``top1``, its ``num_steps`` the depths it covers), residual
    shares h_2..h_W (``shares``) and how the tree is made (``draft``: SGLang's configuration
    or a fixed ``Tree``). ``tree`` is built from the population's mean rates."""

    top1: AcceptanceModel
    shares: Shares
    draft: TreeDraft | OptimalDraft | Tree
    tree: Tree = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.draft, Tree):
            tree = self.draft
        else:
            width = self.draft.topk
            if share_count(self.shares) + 1 < width:
                raise ValueError(
                    f"{share_count(self.shares) + 1} ranks have rates; topk is {width}"
                )
            tree = self.draft.tree(self.mean_rank_rates())
        object.__setattr__(self, "tree", tree)
        if self.top1.num_steps < tree.max_depth:
            raise ValueError(
                f"top-1 rates cover {self.top1.num_steps} depths; the tree has {tree.max_depth}"
            )
        if share_count(self.shares) + 1 < tree.width:
            ranks = share_count(self.shares) + 1
            raise ValueError(f"{ranks} ranks have rates; the tree uses {tree.width}")

    # ----- the interface the engines and summaries share with AcceptanceModel

    @property
    def num_steps(self) -> int:
        """The tree's depth: the most drafts one cycle accepts (L <= num_steps + 1)."""
        return self.tree.max_depth

    @property
    def depth(self) -> int:
        return self.tree.max_depth

    @property
    def heterogeneous(self) -> bool:
        return self.top1.heterogeneous

    @property
    def class_names(self) -> tuple[str, ...]:
        return self.top1.class_names

    @property
    def weights(self) -> np.ndarray:
        return self.top1.weights

    def infeasible(self) -> tuple[str, float, float] | None:
        return self.top1.infeasible()

    def rank_rates(self, top1: np.ndarray) -> np.ndarray:
        """q of shape (n, D, W) from top-1 rates of shape (n, D), W = the shares' ranks + 1
        (shares by depth: row d at depth d + 1, the last repeating)."""
        return residual_rank_rates(np.asarray(top1, dtype=float), np.asarray(self.shares))

    def mean_rank_rates(self) -> np.ndarray:
        """Rank rates (k, W) at the population's mean top-1 rates (what the tree is built at)."""
        return self.rank_rates(self.top1.mean_rates()[None, :])[0]

    def _q(self, top1: np.ndarray) -> np.ndarray:
        return self.rank_rates(np.asarray(top1)[:, : max(self.depth, 1)])

    def sample_requests(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Class index (n,) and top-1 rates (n, k) of ``n`` requests (2 n uniforms, as
        ``AcceptanceModel.sample_requests``: common random numbers across rates)."""
        return self.top1.sample_requests(rng, n)

    def requests_from_uniforms(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``sample_requests`` from its uniforms (n, 2) (as ``AcceptanceModel``'s)."""
        return self.top1.requests_from_uniforms(u)

    def chain_rates(self, top1: np.ndarray) -> np.ndarray:
        """Per-request chain-equivalent rates (n, depth): the law of L as a chain's."""
        return chain_equivalent_rates(self.tree, self._q(top1))

    def sequential_length(self, top1_row: Sequence[float]) -> Callable[[Sequence[float]], int]:
        """L of one cycle from one uniform per depth, for a request with these top-1 rates
        (the per-depth categorical walk, sim/model/tree/samplers.py)."""
        q_rows = self._q(np.asarray(top1_row, dtype=float)[None, :])[0].tolist()
        return partial(tree_length_sequential, child_lists=self.tree.child_lists, q_rows=q_rows)

    # ----- levers (a search moves the top-1 rates; the tree follows)

    def scaled(self, factor: float) -> TreeAcceptance:
        return TreeAcceptance(self.top1.scaled(factor), self.shares, self.draft)

    def with_equal_rates(self, alpha: float) -> TreeAcceptance:
        return TreeAcceptance(self.top1.with_equal_rates(alpha), self.shares, self.draft)

    def mean_rates(self) -> np.ndarray:
        """Weight-averaged mean top-1 rates over classes, shape (k,)."""
        return self.top1.mean_rates()

    # ----- per request

    def _survival(self, top1: np.ndarray) -> np.ndarray:
        return depth_survival(self.tree, self._q(top1))  # (n, depth + 1)

    def _expect(self, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """E over requests of fn(top-1 rates (n, k)) -> (n, ...)."""
        parts = [c.expect(fn) for c in self.top1.classes]
        return sum(w * p for w, p in zip(self.top1.weights, parts, strict=True))

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

    def closed_form_rates(self) -> np.ndarray:
        """Chain-equivalent rates (depth,) the closed forms take (as AcceptanceModel's)."""
        return self.effective_rates()

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

    @staticmethod
    def single(
        tree: Tree, top1: np.ndarray, shares: Sequence[float] | Sequence[Sequence[float]]
    ) -> TreeAcceptance:
        """One class, no spread, a fixed tree: top-1 rates (depth,) for every request;
        ``shares`` h_2..h_W, or one row of them per depth."""
        rates = np.asarray(top1, dtype=float)
        model = AcceptanceModel(rates.shape[0], (RateClass("all", 1.0, rates),))
        h = np.asarray(shares, dtype=float)
        frozen: Shares = (
            tuple(tuple(float(x) for x in row) for row in h)
            if h.ndim == 2
            else tuple(float(x) for x in h)
        )
        return TreeAcceptance(model, frozen, tree)


#: What the engines, summaries and closed forms take: a chain's model or a tree's.
Acceptance = AcceptanceModel | TreeAcceptance
