"""The fast engine's compiled kernel: a chunk's cycles in one pass, compiled by Numba.

The NumPy kernel (sim/simulation/engines/fast.py) spends k passes over a chunk's draws
on compares and sums, and more on the sub-block bookkeeping that finds where each request
ends; a user's 20-line NumPy loop does about the same work, so NumPy alone cannot be much
faster than it. This kernel makes one pass over the same draws: per cycle row (the draws
of one replication's requests at one cycle, contiguous), k compares per draw vectorized
across the row, each request's running tokens and cycles, and the per-position accept
counts of the requests still running; it stops a replication at the first cycle with no
request left, and goes request by request once few are left. It reads the same draws as
the NumPy kernel and returns the same numbers, bit for bit (tests/simulation/
test_compiled_kernel.py); only its speed differs. It draws them itself, NumPy's PCG64
written out in pcg64.py (about 0.75 ns a 32-bit draw), and keeps a row's running tokens
and cycles in int32 lanes of rows padded to whole 512-bit vectors.

Numba compiles it on first use and caches the machine code beside this file (or in the
user's cache when that is read-only): loading Numba and the cached kernel costs a process
about 0.65-0.8 s of CPU and 120 MiB of memory, the first compile on a machine 2-3 s more.
So ``simulate`` uses it by default only for runs large enough to repay that
(``kernel_for``), or when it is already loaded in the process; ``kernel="compiled"`` or
``"numpy"`` chooses.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim.simulation.engines.pcg64 import (
    BUFFER_OUTPUTS,
    advance,
    lanes_of,
    read_states,
    refill,
    seeded_states,
    write_states,
)

__all__ = ["advance_chunk", "read_states", "seeded_states", "write_states"]

#: Fewer running requests than 1/FEW of a row: go request by request.
FEW = 8
#: Rows are padded to a multiple of this many requests (int32 lanes of a 512-bit vector):
#: the padding never runs, and the row loops need no remainder.
LANES = 16


@njit(cache=True)
def buffer_outputs(n_req: int) -> int:
    """Outputs a replication's draw buffer holds for rows of ``n_req`` draws: a row and
    a refill of at least ``BUFFER_OUTPUTS`` beyond it, a multiple of four lanes."""
    return 4 * ((n_req + 1) // 8 + 1) + BUFFER_OUTPUTS


@njit(cache=True, nogil=True, boundscheck=False)
def _next_row(n, lanes, step4, buffer, pos, end):
    """Where the stream's next ``n`` 32-bit uniforms lie in ``buffer`` (uint64 outputs of
    ``lanes``, read as halves low first): halves ``pos`` to ``end`` are drawn and unread;
    when fewer than ``n`` are left, they move to the front (at an odd index if their
    number is odd, so that the outputs after them stay whole) and the rest is refilled.
    Returns the row's first half and the new ``end``."""
    if end - pos >= n:
        return pos, end
    halves = buffer.view(np.uint32)
    left = end - pos
    start = left & 1
    for t in range(left):
        halves[start + t] = halves[pos + t]
    first = (start + left) // 2  # first output to draw
    count = (buffer.shape[0] - first) // 4 * 4
    refill(lanes, step4, buffer[first : first + count])
    return start, 2 * (first + count)


@njit(cache=True, nogil=True, boundscheck=False)
def advance_chunk(
    states: np.ndarray,
    n_cycles: int,
    t_shared: np.ndarray,
    t_request: np.ndarray,
    shared: bool,
    rem: np.ndarray,
    used: np.ndarray,
    at_least: np.ndarray,
    got: np.ndarray,
    by_request: bool,
) -> None:
    """Run up to ``n_cycles`` cycles of every request still running, in place.

    Draws: replication b's next 32-bit uniforms, cycle-major (cycle c of request q is its
    (c Q + q)-th), each 64-bit output of its PCG64 split low half first, as
    ``random_raw().view(np.uint32)`` gives them: ``states`` uint64 (B, 4) holds each
    replication's PCG64 state (pcg64.py's words; ``pcg64.read_states``) and is moved on,
    in place, past the outputs drawn from. ``n_cycles`` Q must be even (whole outputs a
    call); a replication stops drawing at its first cycle with no request running.
    Thresholds: ``t_shared`` uint32 (depth,) when ``shared``, else ``t_request`` int64
    (depth, B Q) (request q of replication b at b Q + q) with -1 where the request's c_j
    is 0 (accepts nothing); a draw accepts draft j when it is <= the threshold
    (``accept_lengths_from_bits``). ``rem`` int64 (B, Q): tokens each request still needs
    (<= 0: done); on return, what it still needs (negative: the last cycle overshot).
    ``used`` int64 (B, Q): cycles run (added to). ``at_least`` int64 (B, depth): cycles
    run with draft j + 1 accepted (added to); ``got`` int64 (depth, B Q): the same per
    request, when ``by_request``.

    Arithmetic on a row runs in int32 lanes: a draft position's pass over a row is then
    one vectorized loop (0.2-0.3 ns a draw at k = 2, against 2.4 ns in uint8 lanes).
    """
    n_reps, n_req = rem.shape
    depth = t_shared.shape[0] if shared else t_request.shape[0]
    width = (n_req + LANES - 1) // LANES * LANES  # rows padded with requests never running
    buffer = np.empty(buffer_outputs(width), dtype=np.uint64)
    halves = buffer.view(np.uint32)
    active = np.zeros(width, dtype=np.int32)
    length = np.empty(width, dtype=np.int32)
    left = np.zeros(width, dtype=np.int32)  # tokens still needed (rem's, in int32 lanes)
    ran = np.zeros(width, dtype=np.int32)  # cycles run in this call
    limits = np.full((depth, width), -1, dtype=np.int64)  # a request's own thresholds
    for b in range(n_reps):
        lanes, step4 = lanes_of(states[b])
        pos = end = drawn = 0  # unread draws: halves pos .. end of buffer; draws taken
        off = b * n_req  # replication b's first request in the flattened (B Q) axis
        rem_b, used_b, at_b = rem[b], used[b], at_least[b]
        n = 0
        for q in range(n_req):
            a = np.int32(rem_b[q] > 0)
            active[q] = a
            left[q] = np.int32(rem_b[q]) if a else np.int32(0)
            ran[q] = 0
            n += a
        if not shared:
            for j in range(depth):
                for q in range(n_req):
                    limits[j, q] = t_request[j, off + q]
        for _ in range(n_cycles):
            if n == 0:
                break
            pos, end = _next_row(width, lanes, step4, buffer, pos, end)
            row = halves[pos : pos + width]  # the row's n_req draws, then the next ones
            pos += n_req
            drawn += n_req
            if n * FEW < n_req:  # few left: each running request alone
                for q in range(n_req):
                    if active[q] == 0:
                        continue
                    x = row[q]
                    ell = np.int32(1)
                    for j in range(depth):
                        h = x <= t_shared[j] if shared else np.int64(x) <= limits[j, q]
                        if h:
                            ell += np.int32(1)
                            at_b[j] += 1
                            if by_request:
                                got[j, off + q] += 1
                    left[q] = np.int32(left[q] - ell)
                    ran[q] = np.int32(ran[q] + 1)
                    if left[q] <= 0:
                        active[q] = 0
                        n -= 1
                continue
            for q in range(width):
                length[q] = np.int32(1)
            for j in range(depth):
                s = np.int32(0)
                if shared:
                    t_j = t_shared[j]
                    for q in range(width):
                        h = np.int32(row[q] <= t_j)
                        length[q] = np.int32(length[q] + h)
                        s = np.int32(s + (h & active[q]))
                else:
                    for q in range(width):
                        h = np.int32(np.int64(row[q]) <= limits[j, q])
                        length[q] = np.int32(length[q] + h)
                        s = np.int32(s + (h & active[q]))
                at_b[j] += s
                if by_request:
                    for q in range(n_req):
                        if shared:
                            h = np.int32(row[q] <= t_shared[j])
                        else:
                            h = np.int32(np.int64(row[q]) <= limits[j, q])
                        got[j, off + q] += h & active[q]
            m = np.int32(0)
            for q in range(width):
                a = active[q]
                v = np.int32(left[q] - np.int32(length[q] * a))
                left[q] = v
                ran[q] = np.int32(ran[q] + a)
                still = np.int32(a & np.int32(v > 0))
                active[q] = still
                m = np.int32(m + still)
            n = m
        for q in range(n_req):
            if rem_b[q] > 0:
                rem_b[q] = left[q]
            used_b[q] += ran[q]
        advance(states[b], (drawn + 1) // 2)  # past the outputs drawn from
