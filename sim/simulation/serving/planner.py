"""The decode iterations the scheduler runs next (``BlockPlanner``): the draft of an
iteration at the batch's size (the policy's, or its adaptive controller's), how many
iterations one event plans (block_size.py ``block_iterations``, and no further than an
adaptive controller keeps its k), how many of them no arrival can cut
(``uncut_iterations``), and the plan itself: a block of iterations (block_plan.py
``plan_block``), one iteration alone (step_plan.py ``plan_step``), or a chunked
iteration (the decode batch first, then prompt chunks in what is left of the token
budget). Planning changes nothing: committing a plan is advance.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import simpy

from sim.model.controllers import AdaptivePolicy
from sim.model.drafts import Draft, max_tokens, verify_tokens
from sim.model.pass_curves import PrefillLoad
from sim.model.tree.acceptance import TreeAcceptance
from sim.simulation.serving.admission import Admission
from sim.simulation.serving.block_plan import BlockPlan, plan_block
from sim.simulation.serving.block_size import (
    admissible_arrival,
    block_iterations,
    uncut_iterations,
)
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.int_reductions import int_min
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.prefills import Prefilling, Prefills
from sim.simulation.serving.step_plan import StepPlan, plan_step

__all__ = ["BlockPlanner", "threshold_columns"]


def threshold_columns(
    max_k: int, trees: Sequence[tuple[Draft, TreeAcceptance]]
) -> tuple[dict[Draft, slice], int]:
    """Each tree's threshold columns in the decode batch (``DecodeBatch.thresholds``) and
    the batch's number of columns: the chain's ``max_k`` first (a chain of k reads the
    first k), then each tree's depths in turn, tree i of depth D_i at
    [max_k + D_1 + ... + D_(i-1), max_k + D_1 + ... + D_i)."""
    columns: dict[Draft, slice] = {}
    start = max_k
    for draft, acc in trees:
        columns[draft] = slice(start, start + acc.depth)
        start += acc.depth
    return columns, start


class BlockPlanner:
    """What the scheduler plans for ``batch`` under ``drafting`` on ``plan``: the KV free
    as ``ledger`` counts it, the slots and announced arrivals of ``admission``, the prompt
    chunks of ``prefills``; ``columns`` the trees' threshold columns
    (``threshold_columns``). ``iteration_ms``: the mean iteration of the last block
    committed (set by advance.py); ``controller``: an adaptive policy's, fresh for the
    replication (None: the policy's draft at each batch size, ``k_of``)."""

    def __init__(
        self,
        env: simpy.Environment,
        plan: ServingPlan,
        drafting: Drafting,
        batch: DecodeBatch,
        ledger: KvLedger,
        admission: Admission,
        prefills: Prefills,
        columns: dict[Draft, slice],
    ):
        policy = drafting.policy
        self.env = env
        self.cost = plan.cost
        self.token_budget = plan.scheduler.token_budget
        self.accepted_extend = plan.draft_extend == "accepted"
        self.drafter = policy.max_k > 0
        self.k_of = list(drafting.by_batch)
        self.columns = columns  # a tree's (the dict holds trees only)
        self.controller = policy.start() if isinstance(policy, AdaptivePolicy) else None
        self.batch = batch
        self.ledger = ledger
        self.prefills = prefills
        self.prefilling = prefills.states
        self.waiting = admission.queue.items  # the store's own list
        self.upcoming = admission.upcoming
        self.max_running = admission.max_running
        self.iteration_ms = 1.0
        self.most_tokens: dict[Draft, int] = {}  # max_tokens of each draft run

    def k_now(self, batch: int) -> Draft:
        """Draft of a decode iteration of ``batch`` requests (the controller's k, if adaptive)."""
        return self.k_of[batch] if self.controller is None else self.controller.k_for_batch(batch)

    def block_size(self, k: Draft) -> int:
        """Iterations to plan (a speed knob only: ``block_iterations``)."""
        most = self.most_tokens.get(k)
        if most is None:
            most = self.most_tokens[k] = max_tokens(k)
        b = self.batch.size
        return block_iterations(
            int_min(self.batch.need),
            most,
            b,
            b + len(self.prefilling),
            self.max_running,
            self.upcoming,
            self.env.now,
            self.iteration_ms,
        )

    def uncut_iterations(self, durations_ms: np.ndarray) -> int:
        """How many of the block's first iterations (``durations_ms`` (n,), from now) end
        where no arrival can have made a waiting request admissible (``uncut_iterations``
        before the ``admissible_arrival``)."""
        running = self.batch.size + len(self.prefilling)
        limit = admissible_arrival(not self.waiting, running, self.max_running, self.upcoming)
        return uncut_iterations(durations_ms, self.env.now, limit)

    def block(self, k: Draft, iterations: int, prefill: PrefillLoad | None = None) -> BlockPlan:
        """Up to ``iterations`` iterations of the batch drafting ``k`` (``plan_block``),
        with ``prefill``'s prompt chunks fused into a single one."""
        ledger = self.ledger
        return plan_block(
            self.batch,
            k,
            iterations,
            ledger.free(),
            self.cost,
            prefill,
            self.drafter,
            columns=self.columns.get(k),
            accepted_extend=self.accepted_extend,
            block_tokens=ledger.block,
            slot_tokens=ledger.slots,
        )

    def plan_decode(self) -> BlockPlan | StepPlan:
        """The next decode iterations: a block, or one iteration alone (``plan_step``, the
        same numbers as a block of one with less work: many users' batches finish a
        request nearly every iteration)."""
        b = self.batch.size
        k = self.k_now(b)
        size = self.block_size(k)
        if self.controller is not None:  # no further than the controller keeps its k
            size = min(size, self.controller.horizon(b))
        if size == 1:
            return plan_step(
                self.batch,
                k,
                self.cost,
                self.drafter,
                columns=self.columns.get(k),
                accepted_extend=self.accepted_extend,
            )
        return self.block(k, size)

    def plan_mixed(self) -> tuple[BlockPlan, list[tuple[Prefilling, int]]]:
        """One chunked iteration: the decode batch first (k + 1 tokens each, a tree's
        nodes), then prompt chunks in what is left of the token budget, in one pass."""
        b = self.batch.size
        k = self.k_now(b)
        chunks, load = self.prefills.chunks(self.token_budget - b * verify_tokens(k))
        return self.block(k, 1, load if load.tokens else None), chunks
