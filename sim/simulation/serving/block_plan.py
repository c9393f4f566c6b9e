"""The pure arithmetic of a block of decode iterations of a fixed batch (``plan_block``).

Between two scheduling decisions (an admission, a completion, a preemption) the decode
batch does not change, so the iterations in between are computed together: for B requests
and up to K iterations, one (B, K) array of acceptance draws, accept lengths, running
token counts and, per iteration, the batch's context and the iteration's time. The
scheduler then lets the iterations happen (as one SimPy event up to where an arrival
could be admitted, then one timeout each; block_size.py ``uncut_iterations``) and cuts the
block at the first boundary where something must change (``plan_block`` already stops at the
first completion and at the first iteration the KV cache could not hold; an arrival that
can be admitted cuts it at the next boundary). Nothing in a block depends on how long the
block is: a request's c-th cycle always uses the draw (key, c) (counter_rng.py), so cutting
a block early and planning the next one gives the same numbers as one long block
(the draws: accept_lengths.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft, max_tokens
from sim.model.kv_blocks import whole_blocks_array
from sim.model.pass_curves import PrefillLoad
from sim.simulation.serving.accept_lengths import accept_lengths
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.int_reductions import int_min, int_sum

__all__ = [
    "CLOSE_ROWS",
    "BlockPlan",
    "plan_block",
]


_NO_LIMIT = float("inf")

#: Batch rows from which ``plan_block`` looks for a completion only among the requests
#: close to their count (fewer: all rows, one indexing less; a speed knob only).
CLOSE_ROWS = 64


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """Up to ``iterations`` decode iterations of a fixed batch drafting ``k`` (a Draft).

    With B requests and n planned iterations: ``lengths`` int8 (B, >= n), tokens request
    b emits in iteration i; ``context`` float (n,), the batch's context sum before each
    iteration; ``durations_ms`` float (n,); ``ends_ms`` float (n,), the iterations' ends
    relative to the block start; ``growth`` int64 (n,), KV tokens the batch gained in the
    block before each iteration (0 for the first); ``total`` int64 (n,), tokens the whole
    batch emitted in the block after each iteration; ``per_iteration`` int64 (n,), tokens
    it emitted in each; ``emitted_by`` int64 (B, >= n) or None, the tokens each request
    emitted after each iteration, when the plan counted them for every row; ``kv_growth``
    int64 (n,) or None, the KV tokens the batch gained before each iteration in whole
    blocks (planned with ``block_tokens`` > 1 under a KV limit; None: ``growth``).
    """

    k: Draft
    lengths: np.ndarray
    context: np.ndarray
    durations_ms: np.ndarray
    ends_ms: np.ndarray
    growth: np.ndarray
    total: np.ndarray
    per_iteration: np.ndarray
    emitted_by: np.ndarray | None = None
    kv_growth: np.ndarray | None = None

    @property
    def iterations(self) -> int:
        return int(self.durations_ms.shape[0])

    def emitted(self, n: int) -> np.ndarray:
        """Tokens each request emitted in the first ``n`` iterations, int64 (B,)."""
        if isinstance(self.k, int) and self.k == 0:  # one token an iteration each
            return np.full(self.lengths.shape[0], n, dtype=np.int64)
        if self.emitted_by is not None:  # the plan's running counts (whole numbers: exact)
            return self.emitted_by[:, n - 1]
        return np.add.reduce(self.lengths[:, :n], axis=1, dtype=np.int64)


def _block_growth(start: np.ndarray, lengths: np.ndarray, block_tokens: int) -> np.ndarray:
    """KV tokens rows holding ``start`` (B,) tokens in whole blocks of ``block_tokens``
    gain before each of n iterations in which they emit ``lengths`` (B, n), together,
    int64 (n,): sum over rows of B x ceil((start + emitted before) / B) - B x ceil(start /
    B). Only the rows whose tokens before the last iteration pass their last block's free
    slots open a block at all; the others are left out of the sum."""
    n = lengths.shape[1]
    free = whole_blocks_array(start, block_tokens) - start
    crossing = (np.add.reduce(lengths[:, : n - 1], axis=1, dtype=np.int64) > free).nonzero()[0]
    if crossing.shape[0] == 0:
        return np.zeros(n, dtype=np.int64)
    rows = lengths[crossing]
    before = np.add.accumulate(rows, axis=1, dtype=np.int64) - rows
    # past its free slots a row opens ceil(over / B) blocks (none while over <= 0)
    opened = whole_blocks_array(before - free[crossing, None], block_tokens)
    return np.add.reduce(np.maximum(opened, 0), axis=0)


def plan_block(
    batch: DecodeBatch,
    k: Draft,
    max_iterations: int,
    kv_free_tokens: float,
    cost: IterationCost,
    prefill: PrefillLoad | None = None,
    drafter: bool = False,
    *,
    columns: slice | None = None,
    accepted_extend: bool = False,
    block_tokens: int = 1,
    slot_tokens: int = 0,
) -> BlockPlan:
    """Plan up to ``max_iterations`` (>= 1) iterations of ``batch`` drafting ``k``.

    The plan stops after the first iteration in which a request reaches its token count,
    and before the first iteration whose KV growth would exceed ``kv_free_tokens`` (the
    free KV after every running request's context and lookahead; the first iteration
    always fits, its tokens go to reserved lookahead slots). ``prefill`` (one iteration
    only): prompt chunks fused into the pass (chunked batching). ``columns``: the draft's
    threshold columns (default: a chain's first k); ``accepted_extend``: the draft extend
    runs over the accepted paths (``expected_path`` wide, moved by each iteration's tokens)
    rather than padded to the verify's width. ``block_tokens`` > 1: each request holds its
    context and its ``slot_tokens`` lookahead slots in whole blocks of that many tokens
    (sim/model/kv_blocks.py), so the KV growth the cut compares is each row's in whole
    blocks, B x ceil((context + slots + emitted) / B) - B x ceil((context + slots) / B),
    summed (``kv_growth``).
    """
    if max_iterations < 1:
        raise ValueError("plan at least one iteration")
    if prefill is not None and max_iterations != 1:
        raise ValueError("an iteration with prompt chunks is planned alone")
    b = batch.size
    if columns is None:
        if not isinstance(k, int):
            raise ValueError("a tree's threshold columns must be given")
        columns = slice(0, k)
    thresholds = batch.thresholds[:, columns]
    lengths = accept_lengths(batch.weyl, thresholds, max_iterations)
    n = max_iterations
    drafts = thresholds.shape[1] > 0 or b == 0
    if not drafts:  # no drafts: every row emits one token an iteration
        per_iteration = np.full(max_iterations, b, dtype=np.int64)
        total = np.arange(b, b * (max_iterations + 1), b, dtype=np.int64)
        # after iteration i every row has emitted i + 1 tokens: the first to finish is
        # the one that needs least, at its count (one iteration whoever finishes)
        least = int_min(batch.need)
        if max_iterations > 1 and least <= max_iterations:
            n = max(least, 1)
    else:
        per_iteration = np.add.reduce(lengths, axis=0, dtype=np.int64)  # (K,)
        total = np.add.accumulate(per_iteration)  # cumsum without its Python wrapper
    emitted_by = None  # each row's running count, when taken for every row
    if max_iterations > 1 and drafts:  # one iteration is planned whoever finishes
        need = batch.need
        if b > CLOSE_ROWS:  # only requests that could reach their count (L <= k + 1)
            close = (need <= max_tokens(k) * max_iterations).nonzero()[0]
            lengths_close, need = lengths[close], need[close]
        else:
            lengths_close = lengths
        emitted = np.add.accumulate(lengths_close, axis=1, dtype=np.int64)
        if b <= CLOSE_ROWS:
            emitted_by = emitted
        finishing = np.logical_or.reduce(emitted >= need[:, None], axis=0)
        first = int(finishing.argmax())
        if finishing[first]:
            n = first + 1
    growth = total[:n] - per_iteration[:n]  # tokens emitted before each iteration
    kv_growth = None
    if block_tokens > 1 and kv_free_tokens < _NO_LIMIT:  # whole blocks a row
        kv_growth = _block_growth(batch.context + slot_tokens, lengths[:, :n], block_tokens)
    # growth is increasing: cut at its first excess (none without a KV limit)
    charged = growth if kv_growth is None else kv_growth
    if kv_free_tokens < _NO_LIMIT and charged[n - 1] > kv_free_tokens:
        n = int(np.searchsorted(charged, kv_free_tokens, side="right"))  # >= 1
        growth = growth[:n]
        if kv_growth is not None:
            kv_growth = kv_growth[:n]
    context = float(int_sum(batch.context)) + growth
    speculates = not (isinstance(k, int) and k == 0)
    if accepted_extend and speculates:
        durations = cost.decode_ms(
            b,
            k,
            context,
            prefill,
            drafter,
            extend_tokens=batch.expected_path(columns),
            accepted_tokens=per_iteration[:n],
        )
    else:
        durations = cost.decode_ms(b, k, context, prefill, drafter)
    ends = np.add.accumulate(durations)
    return BlockPlan(
        k,
        lengths,
        context,
        durations,
        ends,
        growth,
        total[:n],
        per_iteration[:n],
        emitted_by,
        kv_growth,
    )
