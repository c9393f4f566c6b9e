"""The decoding batch as arrays, and the pure arithmetic of a block of decode iterations.

Between two scheduling decisions (an admission, a completion, a preemption) the decode
batch does not change, so the iterations in between are computed together: for B requests
and up to K iterations, one (B, K) array of acceptance draws, accept lengths, running
token counts and, per iteration, the batch's context and the iteration's time. The
scheduler then lets the iterations happen one SimPy timeout at a time and cuts the block
at the first boundary where something must change (``plan_block`` already stops at the
first completion and at the first iteration the KV cache could not hold; an arrival that
can be admitted cuts it at the next boundary). Nothing in a block depends on how long the
block is: a request's c-th cycle always uses the draw (key, c) (counter_rng.py), so cutting
a block early and planning the next one gives the same numbers as one long block.

Accept length of request b in its c-th cycle at draft length k: with the request's
integer thresholds T_1..T_kmax (``workload.acceptance_thresholds``) and its 32-bit draw U,
L = 1 + #{j <= k : U < T_j}: the inverse cdf of the chain (P(L >= j + 1) = c_j), monotone
in k and in the rates for a fixed draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model.batched_cost import IterationCost, PrefillLoad
from sim.simulation.serving.counter_rng import counter_bits_block

__all__ = ["BlockPlan", "DecodeBatch", "accept_lengths", "plan_block"]


class DecodeBatch:
    """The requests decoding now, in admission order, as parallel arrays (B rows):

    ``ids`` int64 (request index in the replication), ``keys`` uint64, ``thresholds``
    int64 (B, kmax), ``need`` int64 (tokens still to emit), ``context`` int64 (tokens held
    in KV, without lookahead), ``cycles`` int64 (decode cycles run), ``last_ms`` float64
    (time of the last delivery; -1 before the first token).
    """

    def __init__(self, max_k: int):
        self.max_k = max_k
        self.ids = np.empty(0, dtype=np.int64)
        self.keys = np.empty(0, dtype=np.uint64)
        self.thresholds = np.empty((0, max_k), dtype=np.int64)
        self.need = np.empty(0, dtype=np.int64)
        self.context = np.empty(0, dtype=np.int64)
        self.cycles = np.empty(0, dtype=np.int64)
        self.last_ms = np.empty(0, dtype=np.float64)

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])

    def append(
        self,
        rid: int,
        key: np.uint64,
        thresholds: np.ndarray,
        need: int,
        context: int,
        cycles: int,
        last_ms: float,
    ) -> None:
        """Add one request as the newest row."""
        self.ids = np.append(self.ids, rid)
        self.keys = np.append(self.keys, key)
        self.thresholds = np.concatenate([self.thresholds, thresholds[None, : self.max_k]])
        self.need = np.append(self.need, need)
        self.context = np.append(self.context, context)
        self.cycles = np.append(self.cycles, cycles)
        self.last_ms = np.append(self.last_ms, last_ms)

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (bool mask of shape (B,)), order unchanged."""
        self.ids = self.ids[rows]
        self.keys = self.keys[rows]
        self.thresholds = self.thresholds[rows]
        self.need = self.need[rows]
        self.context = self.context[rows]
        self.cycles = self.cycles[rows]
        self.last_ms = self.last_ms[rows]


def accept_lengths(
    keys: np.ndarray, cycles: np.ndarray, thresholds: np.ndarray, k: int, iterations: int
) -> np.ndarray:
    """Tokens per cycle, int8 (B, iterations): request b's cycles ``cycles[b]`` onwards at
    draft length ``k`` (``thresholds`` (B, >= k), k < 127)."""
    bits = counter_bits_block(keys, cycles, iterations)
    lengths = np.ones(bits.shape, dtype=np.int8)
    for j in range(k):
        lengths += bits < thresholds[:, j : j + 1]
    return lengths


@dataclass(frozen=True)
class BlockPlan:
    """Up to ``iterations`` decode iterations of a fixed batch at draft length ``k``.

    With B requests and n planned iterations: ``lengths`` int8 (B, >= n), tokens request
    b emits in iteration i; ``context`` float (n,), the batch's context sum before each
    iteration; ``durations_ms`` float (n,); ``ends_ms`` float (n,), the iterations' ends
    relative to the block start; ``growth`` int64 (n,), KV tokens the batch gained in the
    block before each iteration (0 for the first); ``total`` int64 (n,), tokens the whole
    batch emitted in the block after each iteration.
    """

    k: int
    lengths: np.ndarray
    context: np.ndarray
    durations_ms: np.ndarray
    ends_ms: np.ndarray
    growth: np.ndarray
    total: np.ndarray

    @property
    def iterations(self) -> int:
        return int(self.durations_ms.shape[0])

    def emitted(self, n: int) -> np.ndarray:
        """Tokens each request emitted in the first ``n`` iterations, int64 (B,)."""
        return self.lengths[:, :n].sum(axis=1, dtype=np.int64)


def plan_block(
    batch: DecodeBatch,
    k: int,
    max_iterations: int,
    kv_free_tokens: float,
    cost: IterationCost,
    prefill: PrefillLoad | None = None,
    drafter: bool = False,
) -> BlockPlan:
    """Plan up to ``max_iterations`` (>= 1) iterations of ``batch`` at draft length ``k``.

    The plan stops after the first iteration in which a request reaches its token count,
    and before the first iteration whose KV growth would exceed ``kv_free_tokens`` (the
    free KV after every running request's context and lookahead; the first iteration
    always fits, its tokens go to reserved lookahead slots). ``prefill`` (one iteration
    only): prompt chunks fused into the pass (chunked batching).
    """
    if max_iterations < 1:
        raise ValueError("plan at least one iteration")
    if prefill is not None and max_iterations != 1:
        raise ValueError("an iteration with prompt chunks is planned alone")
    b = batch.size
    lengths = accept_lengths(batch.keys, batch.cycles, batch.thresholds, k, max_iterations)
    total = np.cumsum(lengths.sum(axis=0, dtype=np.int64))  # (K,)
    n = max_iterations
    # only requests that could reach their count within the block (L <= k + 1) are checked
    close = np.flatnonzero(batch.need <= (k + 1) * max_iterations)
    if close.size:
        emitted = np.cumsum(lengths[close], axis=1, dtype=np.int64)
        finishing = (emitted >= batch.need[close, None]).any(axis=0)
        if finishing.any():
            n = int(np.argmax(finishing)) + 1
    growth = np.empty(n, dtype=np.int64)
    growth[0] = 0
    growth[1:] = total[: n - 1]
    if growth[n - 1] > kv_free_tokens:  # growth is increasing: cut at its first excess
        n = int(np.searchsorted(growth, kv_free_tokens, side="right"))  # >= 1
        growth = growth[:n]
    context = float(batch.context.sum()) + growth
    durations = cost.decode_ms(b, k, context, prefill, drafter)
    return BlockPlan(k, lengths, context, durations, np.cumsum(durations), growth, total[:n])
