"""The vectorized engine: the model of sim/simulation/engines/common.py over NumPy arrays.

Layout. Cycles x replications x requests, (C, B, Q), processed in chunks of cycles. The
acceptance uniforms of a replication are drawn cycle-major (cycle 0 of every request, then
cycle 1, ...), so the uniform of (request r, cycle c) is the (c Q + r)-th 32-bit draw of that
replication's ``accept`` stream whatever the chunk sizes. Chunk sizes may then follow the
rates (renewal bound of ``chunk_cycles``) without breaking common random numbers: with the
same seed, a scenario with higher rates sees the same uniforms, so every cycle's L is at
least as large (``accept_lengths_from_bits`` is monotone), every request needs at most as
many cycles, and no request gets slower: with jitter, either the total time of a request is
the quantile, at one fixed uniform per request and phase, of the sum of its n cycle
durations (``SummableCycleTimes``, e.g. the gamma model: one draw per request, not per
cycle), which does not fall as n grows; or, for any other ``CycleTimeModel``, the c-th cycle
of a request takes the same time in both (durations drawn per cycle in fixed blocks of
``TIMING_BLOCK`` cycles, cycle-major too).

Work per cycle. One 32-bit uniform (half a raw 64-bit PCG64 output) and, per draft
position j, one compare with the threshold of c_j and one sum: the compares are summed per
request over sub-blocks of ``sub_block(k)`` cycles (a reduction along a middle axis, no
prefix sums over cycles). Running totals over the sub-blocks (1/sub of the data) show in
which sub-block each request reaches its N tokens; only that sub-block's draws are then
replayed per finishing request to find the exact cycle (``_replay``: the rule of
``accept_lengths_from_bits``). A chunk covers the cycles the slowest active request still
needs (renewal bound), so most requests finish in the first chunk. Compared with drawing
cycle by cycle the outputs are identical: the same draws, the same lengths.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sim.model.cycle import PHASES
from sim.model.cycletime import CycleTimeModel, SummableCycleTimes
from sim.model.rates import cumulative_rates, length_moments, mean_accept_length
from sim.model.samplers import bit_thresholds
from sim.simulation.engines.common import (
    EngineOutput,
    EnginePlan,
    ReplicationRngs,
    phase_means,
    request_tok_s,
)

#: Cycles per block of timing draws (fixed, so timing draws line up across scenarios).
TIMING_BLOCK = 64
#: Cap on simulated cycles held in memory at once (B x C x Q), about 6 bytes each.
ELEMENT_BUDGET = 4_000_000
#: Cycles per sub-block: compares are counted per request and sub-block (uint8 counts);
#: a finishing request replays one sub-block, so long drafts (many compares a cycle, few
#: cycles a request) use the shorter one.
SUB = 16
SUB_LONG_DRAFT = 8
LONG_DRAFT = 5


def sub_block(num_steps: int) -> int:
    """Cycles per sub-block at draft length ``num_steps``."""
    return SUB_LONG_DRAFT if num_steps >= LONG_DRAFT else SUB


#: Largest chunk of cycles (keeps a chunk's running totals within int32 for any k).
MAX_CHUNK = 1 << 16
#: Standard deviations of the renewal bound a chunk covers beyond the mean cycles needed.
CHUNK_SD = 4.0

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


def chunk_cycles(need: np.ndarray, mean: np.ndarray, var: np.ndarray, sub: int) -> int:
    """Cycles in the next chunk, from the active requests' remaining ``need`` (n,) and
    their L mean and variance (n,): the most any of them needs by the renewal bound
    need / E[L] + ``CHUNK_SD`` sd, rounded up to ``sub``. A speed knob only: results do not
    depend on it."""
    sd = np.sqrt(need * var / mean**3)
    top = float(np.max(need / mean + CHUNK_SD * sd)) + 1.0
    return sub * max(1, math.ceil(top / sub))


class Workspace:
    """Scratch buffers reused across chunks (fresh large arrays cost page faults that
    would dominate the run time)."""

    def __init__(self) -> None:
        self._bufs: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` (contents undefined)."""
        n = math.prod(shape)
        buf = self._bufs.get(name)
        if buf is None or buf.size < n or buf.dtype != dtype:
            buf = self._bufs[name] = np.empty(n, dtype=dtype)
        return buf[:n].reshape(shape)


def shared_law(
    rates: tuple[float, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """What the engine needs of the L of a request with chain rates ``rates`` (k,), shared
    by every request of a homogeneous run: (mean of L, variance of L, thresholds t (uint32
    (k,)), c_j > 0 (bool (k,)), depth: the positions with c_j > 0, the first ones since c is
    non-increasing), computed once a block (22 us at k = 6); the arrays are read-only."""
    cum = cumulative_rates(np.array(rates, dtype=float))  # (k,)
    mean_l, var_l = length_moments(cum)
    t_all, pos_all = bit_thresholds(cum)
    t_all.setflags(write=False)
    pos_all.setflags(write=False)
    return mean_l, var_l, t_all, pos_all, int(pos_all.sum())  # mean, var: np.float64


def _draw_bits(
    rngs: Sequence[ReplicationRngs], reps: np.ndarray, chunk: int, q_n: int, work: Workspace
) -> np.ndarray:
    """The next ``chunk`` cycles of 32-bit uniforms of each replication in ``reps``:
    uint32 (chunk, len(reps), q_n), cycle-major per replication; replications side by side
    within a cycle, so every row is long (reductions over cycles run fastest on long rows)."""
    bits = work.array("bits", (chunk, len(reps), q_n), np.uint32)
    for i, b in enumerate(reps):
        raw = rngs[b].accept.bit_generator.random_raw(chunk * q_n // 2)
        bits[:, i, :] = raw.view(np.uint32).reshape(chunk, q_n)
    return bits


def _replay(
    bits: np.ndarray,
    bi: np.ndarray,
    qi: np.ndarray,
    sb: np.ndarray,
    rem: np.ndarray,
    sub: int,
    n_reps: int,
    t_all: np.ndarray,
    pos_all: np.ndarray,
    reps: np.ndarray,
    depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cycle by cycle through the sub-block in which each finishing request reaches N.

    ``bits`` (C, B', Q) of the chunk; finishing request i is (bi[i], qi[i]) in sub-block
    sb[i] (``sub`` cycles) with ``rem[i]`` tokens still to emit there. Returns (stop, lengths,
    hist): the index 0..sub-1 of its last cycle in the sub-block, the L of its cycles there
    (sub, n) (0 after the finishing one), and hist (B', k + 2), per replication, the count
    of those cycles with L = v (v = 0 counts the cycles after each finish).
    """
    n = bi.size
    stride = n_reps * bits.shape[2]  # one cycle of the chunk
    base = sb * sub * stride + bi * bits.shape[2] + qi
    flat = base[None, :] + (np.arange(sub) * stride)[:, None]  # (sub, n)
    sub_bits = np.take(bits.reshape(-1), flat)  # (sub, n)
    lengths = np.ones((sub, n), dtype=np.uint8)
    hit = np.empty((sub, n), dtype=np.bool_)
    for j in range(depth):
        if t_all.ndim == 1:  # one profile
            np.less_equal(sub_bits, t_all[j], out=hit)
        else:
            b_abs = reps[bi]
            np.less_equal(sub_bits, t_all[j, b_abs, qi][None, :], out=hit)
            hit &= pos_all[j, b_abs, qi][None, :]
        lengths += hit.view(np.uint8)
    cum = np.empty((sub, n), dtype=np.int32)  # tokens up to each cycle of the sub-block
    cum[0] = lengths[0]
    for c in range(1, sub):
        np.add(cum[c - 1], lengths[c], out=cum[c])
    stop = (cum < rem[None, :]).sum(axis=0)  # cycles before the finishing one: 0 .. sub - 1
    lengths *= np.arange(sub)[:, None] <= stop[None, :]  # cycles after the finish: L = 0
    width = pos_all.shape[0] + 2  # bins for L = 0 (dropped cycles) .. k + 1
    keys = lengths + (bi * width)[None, :]
    hist = np.bincount(keys.ravel(), minlength=n_reps * width).reshape(n_reps, width)
    return stop, lengths, hist


def _chunk(
    bits: np.ndarray,
    act: np.ndarray,
    need: np.ndarray,
    k: int,
    depth: int,
    sub: int,
    shared: bool,
    t_all: np.ndarray,
    pos_all: np.ndarray,
    reps: np.ndarray,
    at_least: np.ndarray,
    by_request: bool,
    work: Workspace,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A chunk's cycles of the running requests ``act`` (B', Q) with
    ``need`` (B', Q) tokens still to emit, from the chunk's ``bits`` (C, B', Q); see the
    module docstring. Adds to ``at_least`` (B, k); returns (used, emitted, got): cycles run
    and tokens emitted in the chunk (B', Q), and when ``by_request`` the cycles with draft
    j + 1 accepted (k, B', Q)."""
    chunk, _, q_n = bits.shape
    s_n = chunk // sub
    ge = work.array("ge", bits.shape, np.bool_)
    counts = work.array("counts", (k, s_n, len(reps), q_n), np.uint8)  # per sub-block
    for j in range(depth):
        t_j = t_all[j] if shared else t_all[j, reps]
        np.less_equal(bits, t_j, out=ge)
        view = ge.view(np.uint8).reshape(s_n, sub, len(reps), q_n)
        np.add.reduce(view, axis=1, out=counts[j])
        if not shared:  # c_j = 0 for some requests: their threshold 0 accepts nothing
            counts[j] *= pos_all[j, reps]
    counts = counts[:depth]
    # running tokens at the end of each sub-block, (S, B', Q), and where N is reached
    if depth:
        running = np.add.reduce(counts, axis=0, dtype=np.int32)
        running += sub
    else:
        running = np.full((s_n, len(reps), q_n), sub, dtype=np.int32)
    for s in range(1, s_n):
        running[s] += running[s - 1]
    below = (running < need[None]).sum(axis=0)  # sub-blocks ending below the need
    finishing = act & (below < s_n)
    full = act & ~finishing
    # requests running through the whole chunk
    used = np.where(full, chunk, 0)  # cycles of this chunk each request uses
    emitted = np.where(full, running[-1], 0)
    # sub-blocks counted whole: all of them for running requests, those before the
    # finishing one for finishing requests
    whole = np.where(finishing, below, np.where(full, s_n, 0))
    got = np.zeros((k, len(reps), q_n), dtype=np.int64) if by_request else None
    if depth:
        counts *= np.arange(s_n)[None, :, None, None] < whole[None, None, :, :]
        at_least[reps, :depth] += counts.sum(axis=(1, 3), dtype=np.int64).T
        if got is not None:
            got[:depth] = counts.sum(axis=1, dtype=np.int64)
    bi, qi = np.nonzero(finishing)
    if bi.size:
        sb = below[bi, qi]
        before = np.where(sb > 0, running[np.maximum(sb - 1, 0), bi, qi], 0)
        rem = need[bi, qi] - before
        stop, lengths, hist = _replay(
            bits, bi, qi, sb, rem, sub, len(reps), t_all, pos_all, reps, depth
        )
        used[bi, qi] = sb * sub + stop + 1
        emitted[bi, qi] = before + lengths.sum(axis=0)
        # hist[b, v]: cycles with L = v among the finishing sub-blocks' used cycles
        at_least[reps, :depth] += np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 2 : depth + 2]
        if got is not None:
            for j in range(depth):
                got[j, bi, qi] += (lengths >= j + 2).sum(axis=0)
    return used, emitted, got


def _rows(reps: np.ndarray, b_n: int) -> np.ndarray | slice:
    """Index of replications ``reps`` (ascending) of a block of ``b_n``: a slice when they
    are all of them (views, not the copies of indexing by an array)."""
    return slice(None) if reps.size == b_n else reps


def _run_block(
    plan: EnginePlan, rngs: Sequence[ReplicationRngs], work: Workspace | None = None
) -> EngineOutput:
    """Simulate len(rngs) replications together (their arrays side by side); see the
    module docstring for the per-chunk work."""
    b_n, q_n, n_tok, k = len(rngs), plan.requests, plan.output_tokens, plan.num_steps
    sub = sub_block(k)
    model = plan.acceptance
    work = work or Workspace()
    shared = not model.heterogeneous
    if shared:  # every request has the class's rates: no per-request draws are needed
        request_class = np.zeros((b_n, q_n), dtype=np.int64)
        # a chain's own rates; a tree's chain-equivalent law (sim/model/tree/acceptance.py)
        law = shared_law(tuple(model.chain_rates(model.mean_rates()[None, :])[0].tolist()))
        mean_l, var_l, t_all, pos_all, depth = law
    else:
        # every replication's request uniforms (2 each, as sample_requests), converted at once
        u = np.concatenate([r.requests.random((q_n, 2)) for r in rngs])
        classes, params = model.requests_from_uniforms(u)  # params: chain rates or tree top-1
        request_class = classes.reshape(b_n, q_n).astype(np.int64)
        rates = model.chain_rates(params).reshape(b_n, q_n, k)
        cum = cumulative_rates(rates)  # (B, Q, k)
        mean_l, var_l = length_moments(cum)  # (B, Q)
        t_all, pos_all = (np.moveaxis(x, -1, 0) for x in bit_thresholds(cum))  # (k, B, Q)
        depth = int(pos_all.any(axis=(1, 2)).sum()) if k else 0

    tokens = np.zeros((b_n, q_n), dtype=np.int64)
    cycles = np.zeros((b_n, q_n), dtype=np.int64)
    at_least = np.zeros((b_n, k), dtype=np.int64)  # cycles with draft j + 1 accepted
    times = plan.cycle_times
    jitter = not times.deterministic
    # the model whose per-request sums are drawn at once (None: drawn cycle by cycle)
    summed = times if jitter and isinstance(times, SummableCycleTimes) else None
    summable = summed is not None
    per_cycle = jitter and not summable
    # summable: one uniform per request and phase, drawn first (fixed count: CRN holds)
    time_u = [r.timing.random((q_n, len(PHASES))) for r in rngs] if summable else []
    varies = plan.extend_varies
    scale = plan.extend_scale() if varies else np.ones(k + 1)  # (k + 1,) by L
    extend_u = [r.timing.random((q_n, k + 1)) for r in rngs] if summable and varies else []
    by_request = varies and jitter  # per-request counts of cycles by L are needed
    accepted = np.zeros((k, b_n, q_n), dtype=np.int64) if by_request else None
    timing = [TimingBlocks(times, r.timing, q_n) for r in rngs] if per_cycle else []
    request_ns = np.zeros((b_n, q_n), dtype=np.int64)
    phase_ns = np.zeros((b_n, len(PHASES)), dtype=np.int64)

    c0 = 0
    reps = np.arange(b_n)  # the replications with a running request
    act = np.ones((b_n, q_n), dtype=bool)  # (B', Q): their running requests
    while reps.size:
        rows = _rows(reps, b_n)
        need = np.where(act, n_tok - tokens[rows], 0)  # (B', Q) tokens still to emit
        mean_a, var_a = (mean_l, var_l) if shared else (mean_l[reps][act], var_l[reps][act])
        cap = max(sub, (ELEMENT_BUDGET // (len(reps) * q_n)) // sub * sub)
        chunk = min(chunk_cycles(need[act], mean_a, var_a, sub), cap, MAX_CHUNK)
        bits = _draw_bits(rngs, reps, chunk, q_n, work)
        used, emitted, got = _chunk(
            bits, act, need, k, depth, sub, shared, t_all, pos_all, reps, at_least,
            by_request, work,
        )  # fmt: skip
        tokens[rows] += emitted
        cycles[rows] += used
        if accepted is not None and got is not None:
            accepted[:, rows] += got
        if per_cycle:
            ran = np.arange(chunk)[:, None]
            for i, b in enumerate(reps):
                t = timing[b].take(c0, c0 + chunk)  # (4, C, Q) int64 ns
                if varies and got is not None:
                    t = _scaled_extend(t, used[i], got[:, i], scale)
                in_run = ran < used[i][None, :]  # (C, Q)
                per_request = (t * in_run[None]).sum(axis=1)  # (4, Q)
                request_ns[b] += per_request.sum(axis=0)
                phase_ns[b] += per_request.sum(axis=1)
        act &= tokens[rows] < n_tok
        live = act.any(axis=1)
        reps, act = reps[live], act[live]
        c0 += chunk

    cyc_total = cycles.sum(axis=1)  # (B,)
    if summed is not None:
        totals = np.stack([summed.sum_quantiles(time_u[b], cycles[b]) for b in range(b_n)])
        if varies and accepted is not None:
            by_length = _counts_by_length(cycles, accepted)  # (B, Q, k + 1)
            mean = plan.cycle_times.mean_ms()["extend"]
            multipliers = np.stack(
                [summed.multiplier_sum_quantiles(extend_u[b], by_length[b]) for b in range(b_n)]
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
        phase_ms = cyc_total[:, None] * means[None, :]
        if varies:
            # sum over cycles of s (L - t) = s (tokens emitted - t cycles)
            extra = plan.extend_per_token_ms * (tokens - plan.extend_tokens * cycles)
            request_ms = request_ms + extra
            phase_ms[:, PHASES.index("extend")] += extra.sum(axis=1)
    at_least_all = np.zeros((b_n, k + 2), dtype=np.int64)  # cycles with L >= j + 1
    at_least_all[:, 0] = cyc_total
    at_least_all[:, 1 : k + 1] = at_least
    counts_out = at_least_all[:, :-1] - at_least_all[:, 1:]  # (B, k + 1): L = j + 1
    return EngineOutput(
        tok_s=request_tok_s(n_tok, request_ms),
        request_ms=request_ms,
        cycles=cycles,
        emitted_tokens=tokens,
        request_class=request_class,
        accept_counts=counts_out,
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
    size = max(1, len(rngs))  # L >= 1: a replication runs at most requests x output_tokens cycles
    if size * plan.requests * plan.output_tokens > ELEMENT_BUDGET:
        mean_l = mean_accept_length(plan.acceptance.mean_rates())
        per_rep = plan.requests * max(1, math.ceil(plan.output_tokens / mean_l))
        size = max(1, ELEMENT_BUDGET // max(1, per_rep))
    work = Workspace()
    parts = [_run_block(plan, rngs[i : i + size], work) for i in range(0, len(rngs), size)]
    return EngineOutput.concatenate(parts)
