"""One decode iteration of a fixed batch (``plan_step``): the same numbers as a block of one
iteration (sim/simulation/serving/block_plan.py ``plan_block``), in Python scalars where
the block has arrays of one element."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft
from sim.simulation.serving.accept_lengths import step_lengths
from sim.simulation.serving.counter_rng import weyl_bits
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.int_reductions import int_sum

__all__ = [
    "StepPlan",
    "plan_step",
]


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One decode iteration of a fixed batch drafting ``k`` (a Draft): ``lengths`` int64
    (B,), the tokens request b emits; ``tokens``, their sum; ``duration_ms``;
    ``context_tokens``, the batch's context sum before it. The same numbers as
    ``plan_block`` with one iteration, in Python scalars where it had arrays of one
    element."""

    k: Draft
    lengths: np.ndarray
    tokens: int
    duration_ms: float
    context_tokens: int


def plan_step(
    batch: DecodeBatch,
    k: Draft,
    cost: IterationCost,
    drafter: bool = False,
    *,
    columns: slice | None = None,
    accepted_extend: bool = False,
) -> StepPlan:
    """Plan one iteration of ``batch`` drafting ``k`` (arguments as ``plan_block``'s):
    request b's accept length is 1 + #{j : U_b < T_bj}, U_b its draw of the cycle
    ``batch.cycles[b]`` (the first column of ``accept_lengths``)."""
    if columns is None:
        if not isinstance(k, int):
            raise ValueError("a tree's threshold columns must be given")
        columns = slice(0, k)
    thresholds = batch.thresholds[:, columns]
    if thresholds.shape[1]:
        lengths = step_lengths(weyl_bits(batch.weyl), thresholds)
    else:  # no drafts: one token each, nothing drawn
        lengths = np.ones(batch.size, dtype=np.int64)
    # ufuncs' reduce: the arrays' sum and min without their Python wrappers
    tokens = int_sum(lengths)
    held = int_sum(batch.context)
    context = float(held)
    if accepted_extend and not (isinstance(k, int) and k == 0):
        duration = cost.decode_ms_at(
            batch.size,
            k,
            context,
            drafter,
            extend_tokens=batch.expected_path(columns),
            accepted_tokens=tokens,
        )
    else:
        duration = cost.decode_ms_at(batch.size, k, context, drafter)
    return StepPlan(k, lengths, tokens, duration, held)
