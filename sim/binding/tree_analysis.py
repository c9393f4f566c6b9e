"""The closed-form analysis of a tree scenario (speculation.topk > 1, or a static
``[speculation.tree]``): what ``specsim run`` adds for a tree, next to the chain analysis.

SGLang's tree for the scenario's (num_steps, topk, num_draft_tokens) at its rates (or the
static tree as given, its width and node count in place of topk and num_draft_tokens), and the
best tree of the same budget (num_draft_tokens - 1 drafts), depth (num_steps) and width
(topk) side by side (sim/model/tree/build.py): E[L] over requests, tok/s by renewal-reward
(1000 E[L] / E[T_cycle]) on the tree cycle (sim/model/tree/cost.py), and for each target
the top-1 rate at depth 1 that reaches it, with the rank profile's shape and the per-depth
top-1 profile kept (every top-1 mean scaled by one factor; sim/model/tree/required.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.model.cycle import CycleCost, throughput_tok_s
from sim.model.tree import Tree
from sim.model.tree.acceptance import OptimalDraft, TreeAcceptance
from sim.model.tree.required import required_scale
from sim.scenario.schema import Scenario

__all__ = ["TreeAnalysis", "TreeTarget", "analyze_tree", "best_tree_acceptance"]


@dataclass(frozen=True, slots=True)
class TreeTarget:
    """One target: the accept length it needs and the top-1 rate (depth 1, weight-averaged
    over classes) that SGLang's tree and the best tree need for it (None: out of reach)."""

    tok_s: float
    required_accept_length: float
    top1_sglang: float | None
    top1_optimal: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "required_accept_length": self.required_accept_length,
            "top1_sglang": self.top1_sglang,
            "top1_optimal": self.top1_optimal,
        }


@dataclass(frozen=True, slots=True)
class TreeAnalysis:
    """SGLang's tree and the best tree at the scenario's rates and cycle."""

    num_steps: int
    topk: int
    num_draft_tokens: int
    sglang: TreeAcceptance
    optimal: TreeAcceptance
    cost: CycleCost
    targets: tuple[TreeTarget, ...]
    #: A static tree's origin (``[speculation.tree]``); None for SGLang's beam tree.
    static_source: str | None = None

    @property
    def tree(self) -> Tree:
        return self.sglang.tree

    def accept_length(self, which: str = "sglang") -> float:
        return getattr(self, which).mean_accept_length()

    def tok_s(self, which: str = "sglang") -> float:
        return throughput_tok_s(self.accept_length(which), self.cost)

    @property
    def ceiling_tok_s(self) -> float:
        """Every draft on the deepest path accepted: 1000 (depth + 1) / T."""
        return 1000.0 * (self.tree.max_depth + 1) / self.cost.total_ms

    def to_dict(self) -> dict[str, Any]:
        q = self.sglang.mean_rank_rates()
        return {
            "num_steps": self.num_steps,
            "topk": self.topk,
            "num_draft_tokens": self.num_draft_tokens,
            "static_tree": self.static_source,
            "rank_rates_depth1": [float(v) for v in q[0]],
            "sglang_tree": _tree_dict(self.sglang.tree),
            "optimal_tree": _tree_dict(self.optimal.tree),
            "accept_length": {w: self.accept_length(w) for w in ("sglang", "optimal")},
            "throughput_tok_s": {w: self.tok_s(w) for w in ("sglang", "optimal")},
            "ceiling_tok_s": self.ceiling_tok_s,
            "cycle_ms": {"mean": self.cost.total_ms, **self.cost.as_dict()},
            "targets": [t.to_dict() for t in self.targets],
        }


def _tree_dict(tree: Tree) -> dict[str, Any]:
    return {
        "drafts": tree.drafts,
        "depth": tree.max_depth,
        "nodes_per_depth": [int(n) for n in tree.nodes_per_depth()[1:]],
        "rank_paths": [list(p) for p in tree.rank_paths()[1:]],
    }


def _required_top1(model: TreeAcceptance, need: float) -> float | None:
    """The top-1 rate at which ``model``'s tree reaches the accept length ``need`` (its
    rates scaled, ``required_scale``), capped at 1; None out of reach."""
    factor = required_scale(model, need)
    if factor is None:
        return None
    return float(min(1.0, factor * float(model.top1.mean_rates()[0])))


def best_tree_acceptance(scenario: Scenario, sglang: TreeAcceptance) -> TreeAcceptance:
    """The best tree of the scenario's tree ``sglang``'s budget (num_draft_tokens - 1
    drafts), depth (num_steps) and width (topk; a static tree's own), at its rates."""
    sp = scenario.speculation
    best = OptimalDraft(sp.draft_tokens - 1, sp.num_steps, sp.rank_width)
    return TreeAcceptance(sglang.top1, sglang.shares, best)


def analyze_tree(scenario: Scenario, sglang: TreeAcceptance, cost: CycleCost) -> TreeAnalysis:
    """The tree part of the closed-form analysis of a tree scenario (``speculation.topk >
    1`` or a static ``speculation.tree``), its bound acceptance ``sglang`` and expected
    cycle ``cost`` (``TreeBinding.tree_analysis``, sim/binding/draft_binding.py)."""
    sp = scenario.speculation
    optimal = best_tree_acceptance(scenario, sglang)
    targets = []
    for t in scenario.target_tok_s:
        need = t * cost.total_ms / 1000.0
        targets.append(
            TreeTarget(
                t,
                need,
                _required_top1(sglang, need),
                _required_top1(optimal, need),
            )
        )
    source = None
    if sp.tree is not None:
        source = sp.tree.source or (
            f"preset {sp.tree.preset}" if sp.tree.preset else "speculation.tree"
        )
    return TreeAnalysis(
        sp.num_steps,
        sp.rank_width,
        sp.draft_tokens,
        sglang,
        optimal,
        cost,
        tuple(targets),
        static_source=source,
    )


def nodes_per_depth_text(tree: Tree) -> str:
    """``1: 4, 2: 3, ...`` (drafts at each depth)."""
    counts = np.asarray(tree.nodes_per_depth()[1:])
    return ", ".join(f"{d}: {int(n)}" for d, n in enumerate(counts, start=1))
