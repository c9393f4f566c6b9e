"""The vectorized engine: the model of sim/simulation/engines/common.py over NumPy arrays.

Layout. Replications x cycles x requests, (B, C, Q), processed in chunks of cycles. The
acceptance uniforms of a replication are drawn cycle-major (cycle 0 of every request, then
cycle 1, ...), so the uniform of (request r, cycle c) is the (c Q + r)-th draw of that
replication's ``accept`` stream whatever the chunk sizes. Chunk sizes may then follow the
rates (renewal bound of ``cycles_bound``) without breaking common random numbers: with the
same seed, a scenario with higher rates sees the same uniforms, so every cycle's L is at
least as large (``accept_lengths_from_bits`` is monotone), every request needs at most as
many cycles, and no request gets slower: with jitter, either the total time of a request is
the quantile, at one fixed uniform per request and phase, of the sum of its n cycle
durations (``SummableCycleTimes``, e.g. the gamma model: one draw per request, not per
cycle), which does not fall as n grows; or, for any other ``CycleTimeModel``, the c-th cycle
of a request takes the same time in both (durations drawn per cycle in fixed blocks of
``TIMING_BLOCK`` cycles, cycle-major too).

One uniform per cycle (inverse cdf of L; a 32-bit integer, half a raw 64-bit draw) instead
of k, and no per-cycle Python: a chunk is a handful of whole-array passes (draw, then per
position a compare and a count).

A draft extend that grows with L (``EnginePlan.extend_varies``) is honoured from the per
request counts of cycles by L (the per-position counts give them): without jitter the
extra is s (tokens emitted - t cycles); with gamma jitter the cycles with the same L share
a mean, so their extends sum to mean(L) x a Gamma(n_L / cv^2, cv^2) draw (one more uniform
per request and L, drawn after the phase uniforms); with per-cycle draws the counts are
laid over the request's cycles of the chunk in L order (the draws are i.i.d. and
independent of L, so any fixed order gives the same law).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.model.cycle import PHASES
from sim.model.cycletime import CycleTimeModel, SummableCycleTimes
from sim.model.rates import cumulative_rates, length_moments
from sim.model.samplers import accept_lengths_from_bits, bit_thresholds
from sim.simulation.engines.common import (
    EngineOutput,
    EnginePlan,
    ReplicationRngs,
    phase_means,
    request_tok_s,
)

#: Cycles per block of timing draws (fixed, so timing draws line up across scenarios).
TIMING_BLOCK = 64
#: Cap on simulated cycles held in memory at once (B x C x Q), about 10 bytes each.
ELEMENT_BUDGET = 4_000_000
#: Smallest chunk of cycles (below it, per-chunk overhead dominates); the largest keeps
#: per-chunk counts in uint16 (half the memory traffic of wider sums).
MIN_CHUNK = 16
MAX_CHUNK = 65_534  # even, so rounding chunks up to even stays within uint16


#: Jittered durations are summed in integer nanoseconds: sums are then exact, so results
#: do not depend on how cycles are chunked or replications batched (nor on ``workers``).
NS_PER_MS = 1_000_000


class TimingBlocks:
    """Phase durations of cycle c of every request, drawn in fixed blocks of cycles.

    ``take(c0, c1)`` returns int64 nanoseconds of shape (4, c1 - c0, Q) in ``PHASES``
    order; blocks are drawn from ``rng`` in order as needed and dropped once passed
    (calls must not go backwards).
    """

    def __init__(self, model: CycleTimeModel, rng: np.random.Generator, requests: int):
        self._model, self._rng, self._q = model, rng, requests
        self._start = 0  # first cycle held
        self._held = np.empty((len(PHASES), 0, requests), dtype=np.int64)

    def take(self, c0: int, c1: int) -> np.ndarray:
        while self._start + self._held.shape[1] < c1:
            draw = self._model.sample(self._rng, TIMING_BLOCK * self._q)
            block = np.stack([draw[p].reshape(TIMING_BLOCK, self._q) for p in PHASES])
            block = np.rint(block * NS_PER_MS).astype(np.int64)
            self._held = np.concatenate([self._held, block], axis=1)
        drop = c0 - self._start
        if drop > 0:
            self._held = self._held[:, drop:]
            self._start = c0
        return self._held[:, : c1 - c0]


def chunk_cycles(need: np.ndarray, mean: np.ndarray, var: np.ndarray) -> int:
    """Cycles in the next chunk, from the active requests' remaining ``need`` (n,) and
    their L mean and variance (n,): the 10th percentile of need / E[L] - 3 sd (renewal
    theory), at least ``MIN_CHUNK`` and at most max(need). A speed knob only: results do
    not depend on it."""
    sd = np.sqrt(need * var / mean**3)
    low = need / mean - 3.0 * sd
    quick = float(np.partition(low, low.size // 10)[low.size // 10])  # ~10th percentile
    return int(min(max(MIN_CHUNK, quick), need.max()))


class Workspace:
    """A scratch bool buffer reused across chunks and blocks (fresh large arrays cost page
    faults that would dominate the run time)."""

    def __init__(self) -> None:
        self._ge = np.empty(0, dtype=bool)

    def bools(self, shape: tuple[int, int]) -> np.ndarray:
        """A bool array of ``shape`` (contents undefined)."""
        n = shape[0] * shape[1]
        if self._ge.size < n:
            self._ge = np.empty(n, dtype=bool)
        return self._ge[:n].reshape(shape)


def _run_block(
    plan: EnginePlan, rngs: Sequence[ReplicationRngs], work: Workspace | None = None
) -> EngineOutput:
    """Simulate len(rngs) replications together (their arrays side by side).

    Per chunk of C cycles (C even) and replication: draw C x Q 32-bit uniform integers
    (C Q / 2 raw 64-bit outputs of the replication's ``accept`` bit generator, so the draw
    of (cycle, request) is the same whatever the chunking); for each position j the
    cycles with draft j accepted are counted per request, which gives the tokens of the
    whole chunk without materialising L. Requests whose count reaches their need finish
    inside the chunk; only their columns are replayed exactly (L, cumulative sum, first
    passage) to drop the cycles after the finishing one.
    """
    b_n, q_n, n_tok, k = len(rngs), plan.requests, plan.output_tokens, plan.num_steps
    model = plan.acceptance
    work = work or Workspace()
    drawn = [model.sample_requests(r.requests, q_n) for r in rngs]
    request_class = np.stack([c for c, _ in drawn]).astype(np.int64)  # (B, Q)
    params = np.concatenate([p for _, p in drawn])  # (B Q, P): a chain's rates, a tree's top-1
    rates = model.chain_rates(params).reshape(b_n, q_n, k)  # a tree: its chain-equivalent law
    cum = cumulative_rates(rates)  # (B, Q, k)
    al, var = length_moments(cum)  # (B, Q)
    shared = not model.heterogeneous
    bits_t, bits_pos = (np.moveaxis(x, -1, 0) for x in bit_thresholds(cum))  # (k, B, Q)

    tokens = np.zeros((b_n, q_n), dtype=np.int64)
    cycles = np.zeros((b_n, q_n), dtype=np.int64)
    accepted = np.zeros((k, b_n, q_n), dtype=np.int64)  # cycles with draft j + 1 accepted
    times = plan.cycle_times
    jitter = not times.deterministic
    summable = jitter and isinstance(times, SummableCycleTimes)
    per_cycle = jitter and not summable
    # summable: one uniform per request and phase, drawn first (fixed count: CRN holds)
    time_u = [r.timing.random((q_n, len(PHASES))) for r in rngs] if summable else []
    varies = plan.extend_varies
    scale = plan.extend_scale() if varies else np.ones(k + 1)  # (k + 1,) by L
    extend_u = [r.timing.random((q_n, k + 1)) for r in rngs] if summable and varies else []
    timing = [TimingBlocks(times, r.timing, q_n) for r in rngs] if per_cycle else []
    request_ns = np.zeros((b_n, q_n), dtype=np.int64)
    phase_ns = np.zeros((b_n, len(PHASES)), dtype=np.int64)

    c0 = 0
    active = np.ones((b_n, q_n), dtype=bool)
    while active.any():
        reps = np.flatnonzero(active.any(axis=1))
        act = active[reps]
        need = np.where(act, n_tok - tokens[reps], 0)  # (B', Q)
        chunk = chunk_cycles(need[act], al[reps][act], var[reps][act])
        chunk = max(1, min(chunk, MAX_CHUNK, ELEMENT_BUDGET // (len(reps) * q_n)))
        chunk += chunk % 2  # C Q even: whole raw 64-bit draws per chunk
        ge = work.bools((chunk, q_n))
        got16 = np.zeros((k, len(reps), q_n), dtype=np.uint16)  # chunk <= MAX_CHUNK
        draws = []
        for i, b in enumerate(reps):
            raw = rngs[b].accept.bit_generator.random_raw(chunk * q_n // 2)
            bits = raw.view(np.uint32).reshape(chunk, q_n)
            draws.append(bits)
            for j in range(k):
                if shared and not bits_pos[j, 0, 0]:
                    break  # c_j = 0: no later draft is accepted either
                t_j = bits_t[j, 0, 0] if shared else bits_t[j, b][None, :]
                np.less_equal(bits, t_j, out=ge)
                np.add.reduce(ge.view(np.uint8), axis=0, dtype=np.uint16, out=got16[j, i])
        got = got16.astype(np.int64) * bits_pos[:, reps]  # c_j = 0 accepts nothing
        emitted = chunk + got.sum(axis=0)  # (B', Q) tokens if the whole chunk ran
        ran = np.where(act, chunk, 0)
        bi, qi = np.nonzero(act & (emitted >= need))  # requests finishing in this chunk
        tails: np.ndarray | None = None
        if bi.size:
            sub_bits = np.concatenate([draws[i][:, qi[bi == i]].T for i in np.unique(bi)])
            b_abs = reps[bi]
            lengths = accept_lengths_from_bits(
                sub_bits, bits_t[:, b_abs, qi][:, :, None], bits_pos[:, b_abs, qi][:, :, None]
            )  # (n, C)
            running = np.cumsum(lengths, axis=1, dtype=np.int64)
            stop = (running < need[bi, qi][:, None]).sum(axis=1) + 1  # first passage, <= C
            ran[bi, qi] = stop
            emitted[bi, qi] = running[np.arange(bi.size), stop - 1]
            tails = np.arange(chunk)[None, :] >= stop[:, None]  # cycles after the finish
            for j in range(k):
                got[j, bi, qi] -= ((lengths > j + 1) & tails).sum(axis=1)
        tokens[reps] += np.where(act, emitted, 0)
        cycles[reps] += ran
        accepted[:, reps] += np.where(act, got, 0)
        if per_cycle:
            for i, b in enumerate(reps):
                t = timing[b].take(c0, c0 + chunk)  # (4, C, Q) int64 ns
                if varies:
                    t = _scaled_extend(t, ran[i], got[:, i], scale)
                per_request = t.sum(axis=1) * act[i]  # (4, Q)
                mine = bi == i
                if tails is not None and mine.any():
                    cols = qi[mine]
                    per_request[:, cols] -= (t[:, :, cols] * tails[mine].T[None]).sum(axis=1)
                request_ns[b] += per_request.sum(axis=0)
                phase_ns[b] += per_request.sum(axis=1)
        active[reps] = act & (tokens[reps] < n_tok)
        c0 += chunk

    if summable:
        totals = np.stack([times.sum_quantiles(time_u[b], cycles[b]) for b in range(b_n)])
        if varies:
            by_length = _counts_by_length(cycles, accepted)  # (B, Q, k + 1)
            mean = plan.cycle_times.mean_ms()["extend"]
            multipliers = np.stack(
                [times.multiplier_sum_quantiles(extend_u[b], by_length[b]) for b in range(b_n)]
            )
            totals[:, :, PHASES.index("extend")] = mean * (multipliers * scale).sum(axis=2)
        request_ms = totals.sum(axis=2)  # (B, Q)
        phase_ms = totals.sum(axis=1)  # (B, 4)
    elif per_cycle:
        request_ms = request_ns / NS_PER_MS
        phase_ms = phase_ns / NS_PER_MS
    else:
        means = phase_means(plan.cycle_times)
        request_ms = cycles * means.sum()
        phase_ms = cycles.sum(axis=1)[:, None] * means[None, :]
        if varies:
            # sum over cycles of s (L - t) = s (tokens emitted - t cycles)
            extra = plan.extend_per_token_ms * (tokens - plan.extend_tokens * cycles)
            request_ms = request_ms + extra
            phase_ms[:, PHASES.index("extend")] += extra.sum(axis=1)
    at_least = np.concatenate([cycles.sum(axis=1)[None], accepted.sum(axis=2)])  # (k+1, B)
    counts = at_least - np.concatenate([at_least[1:], np.zeros((1, b_n), dtype=np.int64)])
    return EngineOutput(
        tok_s=request_tok_s(n_tok, request_ms),
        request_ms=request_ms,
        cycles=cycles,
        emitted_tokens=tokens,
        request_class=request_class,
        accept_counts=counts.T,
        phase_ms=phase_ms,
    )


def _counts_by_length(cycles: np.ndarray, accepted: np.ndarray) -> np.ndarray:
    """Cycles with L = 1..k + 1 per request, shape (..., k + 1), from the cycles run (...)
    and the cycles with draft j + 1 accepted (k, ...): the latter are the cycles with
    L >= j + 2."""
    at_least = np.concatenate([cycles[None], accepted, np.zeros_like(cycles)[None]])
    return np.moveaxis(at_least[:-1] - at_least[1:], 0, -1)


def _scaled_extend(
    t: np.ndarray, ran: np.ndarray, got: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Per-cycle draws ``t`` (4, C, Q) int64 ns with each request's extend draws scaled to
    the L of its cycles: of the ``ran`` (Q,) cycles it ran in the chunk, the last
    ``got[j]`` ((k, Q): cycles with L >= j + 2) get L >= j + 2, i.e. its cycles laid out
    in L order; cycles past ``ran`` keep L = k + 1 (they are dropped by the caller)."""
    c = np.arange(t.shape[1])[:, None]  # (C, 1)
    starts = ran[None, :] - got  # (k, Q): first cycle with L >= j + 2
    lengths = 1 + (c[None] >= starts[:, None, :]).sum(axis=0)  # (C, Q), 1..k + 1
    out = t.copy()
    e = PHASES.index("extend")
    out[e] = np.rint(t[e] * scale[lengths - 1]).astype(np.int64)
    return out


def run_fast(plan: EnginePlan, rngs: Sequence[ReplicationRngs]) -> EngineOutput:
    """Simulate one replication per entry of ``rngs``; arrays (len(rngs), ...) as in
    ``EngineOutput``. Replications are batched to stay within ``ELEMENT_BUDGET``; the
    batching never changes the numbers (each replication reads only its own streams)."""
    per_rep = plan.requests * max(1, plan.output_tokens // max(1, plan.num_steps))
    size = max(1, ELEMENT_BUDGET // max(1, per_rep))
    work = Workspace()
    parts = [_run_block(plan, rngs[i : i + size], work) for i in range(0, len(rngs), size)]
    return EngineOutput.concatenate(parts)
