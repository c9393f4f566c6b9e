"""The vectorized engine: the model of sim/engines/common.py over NumPy arrays.

Layout. Replications x cycles x requests, (B, C, Q), processed in chunks of cycles. The
acceptance uniforms of a replication are drawn cycle-major (cycle 0 of every request, then
cycle 1, ...), so the uniform of (request r, cycle c) is the (c Q + r)-th draw of that
replication's ``accept`` stream whatever the chunk sizes. Chunk sizes may then follow the
rates (renewal bound of ``cycles_bound``) without breaking common random numbers: with the
same seed, a scenario with higher rates sees the same uniforms, so every cycle's L is at
least as large (``accept_lengths_inverse_cdf`` is monotone), every request needs at most as
many cycles, and, the c-th cycle of a request taking the same time in both (timing drawn in
fixed blocks of ``TIMING_BLOCK`` cycles, cycle-major too), no request gets slower.

One uniform per cycle (inverse cdf of L) instead of k, and no per-cycle Python: a chunk is
a handful of whole-array passes (draw, k compares, cumsum, count, mask, bincount).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.acceptance import accept_lengths_inverse_cdf, cumulative_rates
from sim.cycletime import PHASES, CycleTimeModel
from sim.engines.common import (
    EngineOutput,
    EnginePlan,
    ReplicationRngs,
    cycles_bound,
    length_moments,
    phase_means,
    request_tok_s,
)

#: Cycles per block of timing draws (fixed, so timing draws line up across scenarios).
TIMING_BLOCK = 64
#: Cap on simulated cycles held in memory at once (B x C x Q), about 15 bytes each.
ELEMENT_BUDGET = 4_000_000


class TimingBlocks:
    """Phase durations of cycle c of every request, drawn in fixed blocks of cycles.

    ``take(c0, c1)`` returns shape (4, c1 - c0, Q) in ``PHASES`` order; blocks are drawn
    from ``rng`` in order as needed and dropped once passed (calls must not go backwards).
    """

    def __init__(self, model: CycleTimeModel, rng: np.random.Generator, requests: int):
        self._model, self._rng, self._q = model, rng, requests
        self._start = 0  # first cycle held
        self._held = np.empty((len(PHASES), 0, requests))

    def take(self, c0: int, c1: int) -> np.ndarray:
        while self._start + self._held.shape[1] < c1:
            draw = self._model.sample(self._rng, TIMING_BLOCK * self._q)
            block = np.stack([draw[p].reshape(TIMING_BLOCK, self._q) for p in PHASES])
            self._held = np.concatenate([self._held, block], axis=1)
        drop = c0 - self._start
        if drop > 0:
            self._held = self._held[:, drop:]
            self._start = c0
        return self._held[:, : c1 - c0]


def _run_block(plan: EnginePlan, rngs: Sequence[ReplicationRngs]) -> EngineOutput:
    """Simulate len(rngs) replications together (their arrays side by side)."""
    b_n, q_n, n_tok, k = len(rngs), plan.requests, plan.output_tokens, plan.num_steps
    model = plan.acceptance
    request_class = np.empty((b_n, q_n), dtype=np.int64)
    rates = np.empty((b_n, q_n, k))
    for b, r in enumerate(rngs):
        request_class[b], rates[b] = model.sample_requests(r.requests, q_n)
    cum = cumulative_rates(rates)  # (B, Q, k)
    al, var = length_moments(cum)  # (B, Q)
    shared = not model.heterogeneous
    thresholds_all = np.moveaxis(cum, -1, 0)[:, :, None, :]  # (k, B, 1, Q)

    tokens = np.zeros((b_n, q_n), dtype=np.int64)
    cycles = np.zeros((b_n, q_n), dtype=np.int64)
    counts = np.zeros((b_n, k + 2), dtype=np.int64)  # index L (0 = masked-out cycles)
    jitter = not plan.cycle_times.deterministic
    timing = [TimingBlocks(plan.cycle_times, r.timing, q_n) for r in rngs] if jitter else []
    request_ms = np.zeros((b_n, q_n))
    phase_ms = np.zeros((b_n, len(PHASES)))

    c0 = 0
    active = np.ones((b_n, q_n), dtype=bool)
    while active.any():
        reps = np.flatnonzero(active.any(axis=1))
        need = n_tok - tokens[reps]  # (B', Q), <= 0 for finished requests
        act = active[reps]
        chunk = cycles_bound(need[act], al[reps][act], var[reps][act])
        chunk = max(1, min(chunk, ELEMENT_BUDGET // (len(reps) * q_n) or 1))
        u = np.empty((len(reps), chunk, q_n))
        for i, b in enumerate(reps):
            rngs[b].accept.random(out=u[i])
        thresholds = cum[0, 0] if shared else thresholds_all[:, reps]
        lengths = accept_lengths_inverse_cdf(u, thresholds)  # (B', C, Q) uint8
        emitted = np.cumsum(lengths, axis=1, dtype=np.int32)
        short = (emitted < need[:, None, :]).sum(axis=1)  # cycles still short of the need
        ran = np.where(act, np.minimum(short + 1, chunk), 0)  # cycles run in this chunk
        last = np.take_along_axis(emitted, np.maximum(ran - 1, 0)[:, None, :], axis=1)[:, 0]
        tokens[reps] += np.where(ran > 0, last, 0)
        cycles[reps] += ran
        mask = np.arange(chunk)[None, :, None] < ran[:, None, :]  # (B', C, Q)
        lengths *= mask
        for i, b in enumerate(reps):
            counts[b] += np.bincount(lengths[i].ravel(), minlength=k + 2)
        if jitter:
            for i, b in enumerate(reps):
                t = timing[b].take(c0, c0 + chunk) * mask[i]  # (4, C, Q)
                request_ms[b] += t.sum(axis=(0, 1))
                phase_ms[b] += t.sum(axis=(1, 2))
        active[reps] = act & (tokens[reps] < n_tok)
        c0 += chunk

    if not jitter:
        means = phase_means(plan.cycle_times)
        request_ms = cycles * means.sum()
        phase_ms = cycles.sum(axis=1)[:, None] * means[None, :]
    return EngineOutput(
        tok_s=request_tok_s(n_tok, request_ms),
        request_ms=request_ms,
        cycles=cycles,
        emitted_tokens=tokens,
        request_class=request_class,
        accept_counts=counts[:, 1:],  # index 0 held the masked-out cycles
        phase_ms=phase_ms,
    )


def run_fast(plan: EnginePlan, rngs: Sequence[ReplicationRngs]) -> EngineOutput:
    """Simulate one replication per entry of ``rngs``; arrays (len(rngs), ...) as in
    ``EngineOutput``. Replications are batched to stay within ``ELEMENT_BUDGET``; the
    batching never changes the numbers (each replication reads only its own streams)."""
    per_rep = plan.requests * max(1, plan.output_tokens // max(1, plan.num_steps))
    size = max(1, ELEMENT_BUDGET // max(1, per_rep))
    parts = [_run_block(plan, rngs[i : i + size]) for i in range(0, len(rngs), size)]
    return EngineOutput.concatenate(parts)
