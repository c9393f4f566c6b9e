"""The cycle cost of tree drafting (SGLang's EAGLE worker with topk >= 1).

One cycle with (num_steps, topk, num_draft_tokens) (sgl-project/sglang
python/sglang/srt/speculative/eagle_worker.py: ``draft_forward`` runs its loop of
``select_top_k_tokens`` and stops before the drafter pass of the last step;
``verify`` runs the target over the tree with a tree mask; ``forward_draft_extend_after_
decode`` runs the drafter over the accepted tokens) is

    (num_steps - 1) drafter passes over topk tokens each (one per beam)
    + one target verify over num_draft_tokens tokens (the root and the drafts)
    + one drafter draft-extend over the accepted path + the fixed per-cycle overhead.

With topk = 1 and num_draft_tokens = num_steps + 1 this is the chain cycle of
sim/model/cycle.py term by term (``draft_over_ms(step, 1) == step``), so the result is identical.

The drafter pass over m tokens, ``draft_over_ms``: the measured one-token step plus a
growth per extra token, or a table of pass times over m = 1.. tokens (from the hardware
model: at batch 1 a drafter pass is memory-bound, so extra beams add mostly the larger
all-reduce messages and attention reads, not weight reads). The draft extend is the
measured pass, as for the chain: its tokens (the accepted path) do not depend on the width.
The tree-masked verify is timed as a causal verify over the same token count.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.model.cycle import CycleCost, PassTimes, draft_over_ms

__all__ = ["draft_over_ms", "tree_cycle_cost"]


def tree_cycle_cost(
    passes: PassTimes,
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    *,
    draft_ms_per_extra_token: float = 0.0,
    draft_table_ms: Sequence[float] | None = None,
) -> CycleCost:
    """The SGLang tree cycle; ``CycleCost.num_steps`` is ``num_steps`` (draft steps). Note
    that its ``max_tokens`` (num_steps + 1) bounds L only when the tree reaches depth
    num_steps; the tree's own ``max_depth + 1`` is the exact bound."""
    if num_steps < 1 or topk < 1 or num_draft_tokens < 2:
        raise ValueError(
            f"a tree cycle needs num_steps >= 1, topk >= 1, num_draft_tokens >= 2; got "
            f"{num_steps}, {topk}, {num_draft_tokens}"
        )
    step = draft_over_ms(
        passes.draft_step_ms,
        topk,
        ms_per_extra_token=draft_ms_per_extra_token,
        table_ms=draft_table_ms,
    )
    steps = num_steps - 1
    tokens = passes.draft_extend_tokens
    return CycleCost(
        num_steps=num_steps,
        draft_ms=steps * (step + passes.draft_step_overhead_ms),
        verify_ms=passes.verify_over_ms(num_draft_tokens),
        extend_ms=passes.draft_extend_ms,
        overhead_ms=passes.cycle_overhead_ms,
        extend_per_token_ms=passes.draft_extend_ms_per_token,
        extend_tokens=float(num_steps + 1 if tokens is None else tokens),
        draft_overhead_ms=steps * passes.draft_step_overhead_ms,
    )
