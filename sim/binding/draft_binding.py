"""How a scenario drafts, decided once (``draft_binding``): a chain (``ChainBinding``) or a
tree (``TreeBinding``), each giving its acceptance from the resolved acceptance and its
cycle on the pass times. Trees are imported where they are used: a chain's binding reads
no tree code (start-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.binding.acceptance_model import ResolvedAcceptance
from sim.binding.tree_cost import scenario_tree_cost
from sim.hardware.pass_model import PassModel
from sim.model.cycle import CycleCost, PassTimes
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.binding.tree_analysis import TreeAnalysis
    from sim.model.tree import Tree
    from sim.model.tree.acceptance import Acceptance, TreeDraft


def tree_draft(scenario: Scenario) -> TreeDraft | Tree:
    """The tree a tree scenario drafts: the static ``[speculation.tree]``, else SGLang's
    (num_steps, topk, num_draft_tokens)."""
    from sim.model.tree.acceptance import TreeDraft  # lazy: trees only

    sp = scenario.speculation
    static = sp.static_tree
    if static is not None:
        return static
    assert sp.num_draft_tokens is not None
    return TreeDraft(sp.num_steps, sp.topk, sp.num_draft_tokens)


@dataclass(frozen=True, slots=True)
class ChainBinding:
    """What a chain of k drafts (topk 1; k = 0 plain decoding) binds to: its acceptance is
    the top-1 model at k, its cycle the chain's (sim/model/cycle.py ``cycle_cost``)."""

    num_steps: int

    @property
    def draft(self) -> int:
        """The chain as a draft (sim/model/drafts.py): its k."""
        return self.num_steps

    def acceptance(self, resolved: ResolvedAcceptance) -> Acceptance:
        return resolved.top1

    def cycle(self, passes: PassTimes, hw: PassModel) -> CycleCost:
        return chain_cycle_cost(passes, self.num_steps)

    def tree_analysis(self, acceptance: Acceptance, cost: CycleCost) -> None:
        """A chain has no tree to analyse."""
        return None


@dataclass(frozen=True, slots=True)
class TreeBinding:
    """What a tree scenario (topk > 1, or a static ``[speculation.tree]``) binds to: SGLang's
    tree of (num_steps, topk, num_draft_tokens) or the static tree; its acceptance the
    top-1 model with the rank shares on that tree (``TreeAcceptance``), its cycle the
    tree's (``scenario_tree_cost``)."""

    scenario: Scenario

    @property
    def draft(self) -> TreeDraft | Tree:
        return tree_draft(self.scenario)

    def acceptance(self, resolved: ResolvedAcceptance) -> Acceptance:
        from sim.model.tree.acceptance import TreeAcceptance  # lazy: trees only

        assert resolved.spec is not None
        shares = resolved.rank_shares(self.scenario.speculation.rank_width)
        return TreeAcceptance(resolved.top1, shares, self.draft)

    def cycle(self, passes: PassTimes, hw: PassModel) -> CycleCost:
        return scenario_tree_cost(self.scenario, passes, hw)

    def tree_analysis(self, acceptance: Acceptance, cost: CycleCost) -> TreeAnalysis:
        """SGLang's tree and the best tree at the bound ``acceptance`` and expected cycle
        ``cost``, with the top-1 rate each target needs (sim/binding/tree_analysis.py)."""
        from sim.binding.tree_analysis import analyze_tree  # lazy: trees only
        from sim.model.tree.acceptance import TreeAcceptance

        assert isinstance(acceptance, TreeAcceptance)
        return analyze_tree(self.scenario, acceptance, cost)


def draft_binding(scenario: Scenario) -> ChainBinding | TreeBinding:
    """How the scenario drafts, decided once: a chain or a tree. ``bind`` asks it for the
    acceptance and the cycle and the ``Bound`` holds it (``Bound.drafting``), so the
    analysis asks it for the tree's part instead of asking again which one it is."""
    sp = scenario.speculation
    return TreeBinding(scenario) if sp.is_tree else ChainBinding(sp.num_steps)
