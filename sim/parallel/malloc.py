"""A Dask worker's memory allocator put back to glibc's defaults (``protect_malloc``): the
nanny's ``MALLOC_TRIM_THRESHOLD_`` fixes the mmap threshold, which doubled a sweep's CPU.
"""

from __future__ import annotations

import os
import sys

__all__ = ["MMAP_THRESHOLD_BYTES", "M_MMAP_THRESHOLD", "M_TRIM_THRESHOLD", "protect_malloc"]


#: glibc mallopt parameters (malloc.h) and the values restored in a Dask worker: the
#: largest dynamic mmap threshold of 64-bit glibc (DEFAULT_MMAP_THRESHOLD_MAX) and twice it
#: for trimming.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024


def protect_malloc() -> bool:
    """Undo a ``MALLOC_TRIM_THRESHOLD_`` in this process's environment (Linux, glibc).

    Dask's worker manager (the nanny) starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``
    to hand memory back to the system. Setting it also fixes glibc's mmap threshold at
    128 KiB (no dynamic adjustment), so every NumPy array above 128 KiB is a fresh mmap and
    its pages fault in again: measured, a local sweep's CPU doubled, half of it system
    time. Raising both thresholds to the dynamic maximum restores the default behaviour
    for the arrays a simulation makes. Returns whether it changed anything."""
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ or not sys.platform.startswith("linux"):
        return False
    import ctypes  # lazy: only a Dask worker needs it (start-up)

    try:
        libc = ctypes.CDLL(None)
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        ok &= libc.mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(ok)
