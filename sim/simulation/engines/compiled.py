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
test_compiled_kernel.py); only its speed differs.

Numba compiles it on first use and caches the machine code beside this file (or in the
user's cache when that is read-only): loading Numba and the cached kernel costs a process
about 0.3-0.7 s of CPU and 120 MiB of memory, the first compile on a machine 2-3 s more.
So ``simulate`` uses it by default only for runs large enough to repay that
(``kernel_for``), or when it is already loaded in the process; ``kernel="compiled"`` or
``"numpy"`` chooses.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np
from numba import njit

#: NumPy's PCG64 step (C), as a ctypes function of the state's address: the same function
#: for every PCG64, so it is read once from a throwaway generator.
NEXT64 = np.random.PCG64(0).ctypes.next_uint64

_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def state_addresses(generators: Sequence[np.random.PCG64]) -> np.ndarray:
    """The addresses of the generators' PCG64 states, uint64 (len(generators),).

    Read from each generator's ``capsule`` (its ``bitgen_t``, whose first field is the
    state pointer): the same address as ``.ctypes.state_address``, without building the
    ctypes view (about 1 us a generator against 7.5). The generators must outlive every
    use of the addresses (the engine's replications hold them for the whole run).
    """
    out = np.empty(len(generators), dtype=np.uint64)
    for i, gen in enumerate(generators):
        if not isinstance(gen, np.random.PCG64):
            raise TypeError(f"the compiled kernel draws from PCG64, not {type(gen).__name__}")
        bitgen = _CAPSULE_POINTER(gen.capsule, b"BitGenerator")
        out[i] = ctypes.c_void_p.from_address(bitgen).value
    return out


#: Fewer running requests than 1/FEW of a row: go request by request.
FEW = 8

LOW_HALF = np.uint64(0xFFFFFFFF)
HALF_BITS = np.uint64(32)


@njit(cache=True, nogil=True, boundscheck=False)
def _fill_row(next64: object, state: np.uint64, row: np.ndarray, held: np.uint32, holding: bool):
    """The next len(row) 32-bit uniforms of a PCG64 into ``row`` (uint32), low half of each
    64-bit output first; ``held``/``holding``: a high half left over from the row before.
    Returns the new (held, holding)."""
    n = row.shape[0]
    start = 0
    if holding:
        row[0] = held
        start = 1
    for i in range((n - start) // 2):
        x = next64(state)
        row[start + 2 * i] = np.uint32(x & LOW_HALF)
        row[start + 2 * i + 1] = np.uint32(x >> HALF_BITS)
    if (n - start) % 2:
        x = next64(state)
        row[n - 1] = np.uint32(x & LOW_HALF)
        return np.uint32(x >> HALF_BITS), True
    return np.uint32(0), False


@njit(cache=True, nogil=True, boundscheck=False)
def advance_chunk(
    next64: object,
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
    ``random_raw().view(np.uint32)`` gives them: ``next64`` is NumPy's
    ``PCG64().ctypes.next_uint64`` and ``states`` uint64 (B,) the replications'
    ``ctypes.state_address``. ``n_cycles`` Q must be even (whole outputs a call); a
    replication stops drawing at its first cycle with no request running.
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
    row = np.empty(n_req, dtype=np.uint32)
    active = np.empty(n_req, dtype=np.int32)
    length = np.empty(n_req, dtype=np.int32)
    for b in range(n_reps):
        state = states[b]
        off = b * n_req  # replication b's first request in the flattened (B Q) axis
        rem_b, used_b, at_b = rem[b], used[b], at_least[b]
        n = 0
        for q in range(n_req):
            a = np.int32(rem_b[q] > 0)
            active[q] = a
            n += a
        held, holding = np.uint32(0), False
        for _ in range(n_cycles):
            if n == 0:
                break
            held, holding = _fill_row(next64, state, row, held, holding)
            if n * FEW < n_req:  # few left: each running request alone
                for q in range(n_req):
                    if active[q] == 0:
                        continue
                    x = row[q]
                    ell = 1
                    for j in range(depth):
                        h = x <= t_shared[j] if shared else np.int64(x) <= t_request[j, off + q]
                        if h:
                            ell += 1
                            at_b[j] += 1
                            if by_request:
                                got[j, off + q] += 1
                    rem_b[q] -= ell
                    used_b[q] += 1
                    if rem_b[q] <= 0:
                        active[q] = 0
                        n -= 1
                continue
            for q in range(n_req):
                length[q] = 1
            for j in range(depth):
                s = np.int32(0)
                if shared:
                    t_j = t_shared[j]
                    for q in range(n_req):
                        h = np.int32(row[q] <= t_j)
                        length[q] = np.int32(length[q] + h)
                        s = np.int32(s + (h & active[q]))
                else:
                    for q in range(n_req):
                        h = np.int32(np.int64(row[q]) <= t_request[j, off + q])
                        length[q] = np.int32(length[q] + h)
                        s = np.int32(s + (h & active[q]))
                at_b[j] += s
                if by_request:
                    for q in range(n_req):
                        if shared:
                            h = np.int32(row[q] <= t_shared[j])
                        else:
                            h = np.int32(np.int64(row[q]) <= t_request[j, off + q])
                        got[j, off + q] += h & active[q]
            m = 0
            for q in range(n_req):
                a = active[q]
                left = rem_b[q] - length[q] * a
                rem_b[q] = left
                used_b[q] += a
                still = np.int32(a & np.int32(left > 0))
                active[q] = still
                m += still
            n = m
