"""What a serving replication runs (sim/simulation/serving/engine.py): the plan
(``ServingPlan``: workload, scheduler, iteration cost, acceptance; everything besides
random numbers and the policy) and a policy worked out on it once (``Drafting``: its
draft at every batch size, its trees' acceptance, the KV lookahead a running request
holds, the KV cache it runs with and the block its KV is held in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sim.model.acceptance import AcceptanceModel
from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft, is_tree, lookahead_tokens
from sim.model.kv_blocks import whole_blocks
from sim.model.policy import SpeculationPolicy, k_lookup, policy_drafts
from sim.model.tree.acceptance import TreeAcceptance
from sim.model.tree.rates import Shares
from sim.simulation.serving.scheduler import SchedulerConfig
from sim.simulation.serving.workload import Workload

__all__ = ["Drafting", "ServingPlan"]


@dataclass(frozen=True, slots=True)
class ServingPlan:
    """Everything a serving replication needs besides random numbers and the policy.

    ``acceptance`` is the acceptance model at the largest draft length any policy run on
    this plan uses (policies with fewer drafts use the first rates of each request; for a
    tree, its top-1 rates by depth). ``rank_shares``: the residual shares h_2..h_W of the
    ranks below the top-1 (sim/model/tree/rates.py), needed by policies that draft trees;
    ``draft_extend``: ``accepted`` (the draft extend runs over each request's accepted
    path: SGLang's eager extend, vLLM's proposer) or ``padded`` (every request at the
    verify's width, as SGLang's CUDA-graphed draft extend runs).
    """

    workload: Workload
    scheduler: SchedulerConfig
    cost: IterationCost
    acceptance: AcceptanceModel
    rank_shares: Shares = ()
    draft_extend: Literal["accepted", "padded"] = "accepted"
    _trees: dict[Draft, TreeAcceptance] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.draft_extend not in ("accepted", "padded"):
            raise ValueError(f"unknown draft_extend {self.draft_extend!r}")

    @property
    def max_k(self) -> int:
        return self.acceptance.num_steps

    def tree_acceptance(self, draft: Draft) -> TreeAcceptance:
        """The requests' acceptance over ``draft`` (a tree): the plan's top-1 rates, its
        rank shares, and the tree built at the population's mean rates (ValueError when the
        shares do not cover the tree's width)."""
        tree = self._trees.get(draft)
        if tree is None:
            assert is_tree(draft)
            tree = TreeAcceptance(self.acceptance, self.rank_shares, draft)  # type: ignore[arg-type]
            self._trees[draft] = tree
        return tree

    def lookahead(self, policy: SpeculationPolicy) -> int:
        """KV tokens a running request holds beyond its context under ``policy``: the most
        slots any of its drafts reserves (sim/model/drafts.py ``lookahead_tokens``) and its
        recurrent state's (``SchedulerConfig.state_tokens``)."""
        drafts = policy_drafts(policy, self.scheduler.max_running(policy))
        slots, state = _lookahead(policy, drafts, self.scheduler)
        return slots + state

    def drafting(
        self, policy: SpeculationPolicy, by_batch: Sequence[Draft] | None = None
    ) -> Drafting:
        """``policy`` worked out on this plan, once: its draft at every batch size
        (``by_batch`` when its ``k_lookup`` is at hand), its trees' acceptance (ValueError
        when the rank shares do not cover a tree's width), its KV lookahead and the KV
        cache it runs with."""
        if by_batch is None:
            by_batch = k_lookup(policy, self.scheduler.max_running(policy))
        lookup = tuple(by_batch)
        drafts = tuple(dict.fromkeys(lookup[1:]))  # in first-use order (``policy_drafts``)
        trees = tuple((d, self.tree_acceptance(d)) for d in drafts if is_tree(d))
        cap = self.scheduler.kv_capacity(policy)
        slots, state = _lookahead(policy, drafts, self.scheduler)
        blocks = self.scheduler.block_tokens(policy)
        return Drafting(policy, lookup, trees, slots + state, cap, state, blocks)

    def check(self, policy: SpeculationPolicy, by_batch: Sequence[Draft] | None = None) -> Drafting:
        """``policy`` worked out on this plan (``drafting``); ValueError when it cannot run
        on it. What a run takes: the engine runs a checked ``Drafting``."""
        if policy.max_k > self.max_k:
            raise ValueError(
                f"the policy drafts up to {policy.max_k} tokens but the acceptance model "
                f"covers {self.max_k}"
            )
        drafting = self.drafting(policy, by_batch)
        self.scheduler.check_drafts(drafting.by_batch)
        cap = drafting.kv_capacity
        need = drafting.held(self.workload.max_request_tokens + 1)
        if cap is not None and need > cap:
            raise ValueError(
                f"the KV cache ({cap} tokens) is smaller than one request "
                f"(up to {need} tokens with lookahead"
                + (" and recurrent state" if self.scheduler.pooled_state else "")
                + (
                    f", in whole blocks of {drafting.block_tokens}"
                    if drafting.block_tokens > 1
                    else ""
                )
                + ")"
            )
        return drafting


def _lookahead(
    policy: SpeculationPolicy, drafts: Sequence[Draft], scheduler: SchedulerConfig
) -> tuple[int, int]:
    """KV tokens beyond its context a running request holds under ``policy``: the most
    slots any of its ``drafts`` reserves, and its recurrent state's in the pool."""
    slots = max(policy.max_k + 1, *(lookahead_tokens(d) for d in drafts))
    return slots, scheduler.state_tokens(policy, drafts)


@dataclass(frozen=True, slots=True)
class Drafting:
    """A policy as a plan runs it, worked out once (``ServingPlan.drafting``):
    ``by_batch`` the draft at every decode batch size 0..max_running_requests (index =
    batch size, entry 0 unused: ``k_lookup``); ``trees`` each tree it drafts (first-use
    order) with the requests' acceptance over it; ``lookahead`` the KV tokens a running
    request holds beyond its context (its lookahead slots and a hybrid target's recurrent
    state); ``kv_capacity`` the KV cache it runs with (None:
    unlimited); ``state_tokens`` the recurrent state's share of ``lookahead``;
    ``block_tokens`` the KV block its requests' context and lookahead slots are held in
    (1: per token)."""

    policy: SpeculationPolicy
    by_batch: tuple[Draft, ...]
    trees: tuple[tuple[Draft, TreeAcceptance], ...]
    lookahead: int
    kv_capacity: int | None
    state_tokens: int = 0
    block_tokens: int = 1

    @property
    def slot_tokens(self) -> int:
        """The lookahead slots a running request holds beside its context (its state
        apart)."""
        return self.lookahead - self.state_tokens

    def held(self, context_tokens: int) -> int:
        """KV tokens a running request with ``context_tokens`` of context holds: context
        and lookahead slots in whole blocks, and its state (``lookahead`` more than the
        context with blocks of one token)."""
        if self.block_tokens == 1:
            return context_tokens + self.lookahead
        return whole_blocks(context_tokens + self.slot_tokens, self.block_tokens) + (
            self.state_tokens
        )

    def tree(self, draft: Draft) -> TreeAcceptance:
        """The requests' acceptance over ``draft``, one of the policy's trees."""
        return next(acc for d, acc in self.trees if d == draft)
