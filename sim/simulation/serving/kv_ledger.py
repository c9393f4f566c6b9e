"""How running requests hold a serving replication's KV cache (``KvLedger``): the tokens
a request holds from its admission, those decode rows hold together, and the growth the
survivors of an iteration reserve, preempting the newest rows while it does not fit.

A request holds its context and lookahead slots (in whole KV blocks where the plan's
server hands them out so: vLLM ``SchedulerConfig.block_tokens``, sim/model/kv_blocks.py)
and its recurrent state's tokens beside them (``Drafting.held``). The cache itself is a
count of free tokens (kv_cache.py); without a KV limit there is no cache and tokens are
counted one by one (blocks of one token).
"""

from __future__ import annotations

import numpy as np

from sim.model.kv_blocks import whole_blocks_array
from sim.simulation.serving.int_reductions import int_sum
from sim.simulation.serving.kv_cache import KvCache
from sim.simulation.serving.plan import Drafting

__all__ = ["KvLedger"]


class KvLedger:
    """The KV cache of ``drafting`` (``cache``: None without a KV limit) and what
    requests hold of it: ``lookahead`` tokens beyond the context each (``slots`` lookahead
    slots and ``state_tokens`` of recurrent state), in blocks of ``block`` tokens."""

    def __init__(self, drafting: Drafting):
        cap = drafting.kv_capacity
        self.cache = None if cap is None else KvCache(cap)
        self.drafting = drafting
        self.lookahead = drafting.lookahead
        # whole KV blocks (1: per token, and without a KV limit)
        self.block = drafting.block_tokens if self.cache is not None else 1
        self.slots = drafting.slot_tokens
        self.state_tokens = drafting.state_tokens

    def holds(self, context: int) -> int:
        """KV tokens a request with ``context`` tokens of context holds: context +
        lookahead, or ``Drafting.held`` in whole blocks."""
        if self.block == 1:
            return context + self.lookahead
        return self.drafting.held(context)

    def rows_hold(self, context: np.ndarray) -> int:
        """KV tokens decode rows of ``context`` (int64, (B,)) tokens of context hold,
        together (``holds`` of each)."""
        if self.block == 1:
            return int_sum(context) + context.shape[0] * self.lookahead
        held = whole_blocks_array(context + self.slots, self.block)
        return int_sum(held) + context.shape[0] * self.state_tokens

    def free(self) -> float:
        """Free KV tokens (infinite without a KV limit)."""
        return float("inf") if self.cache is None else float(self.cache.level)

    def reserve_growth(self, context: np.ndarray, growth: np.ndarray) -> int:
        """Reserve the growth of decode rows whose contexts (``context`` (B,), already
        grown) grew by ``growth`` (B,) tokens; where it does not fit, the newest rows give
        back what they held before it (``holds`` of context - growth) and reserve
        nothing. In whole blocks a row grows by the blocks its new tokens open. Returns the
        first row to preempt (B when none is). Needs a cache."""
        cache = self.cache
        assert cache is not None
        charged = growth
        if self.block > 1:
            after = context + self.slots
            charged = whole_blocks_array(after, self.block)
            charged -= whole_blocks_array(after - growth, self.block)
        need = int_sum(charged)
        rows = context.shape[0]
        first = rows
        freed = 0
        while need > cache.level + freed:
            first -= 1
            assert first >= 0, "the KV cache cannot hold one request"
            need -= int(charged[first])
            freed += self.drafting.held(int(context[first] - growth[first]))
        if first < rows:
            cache.put(freed)
        if need:
            cache.get(need)
        return first
