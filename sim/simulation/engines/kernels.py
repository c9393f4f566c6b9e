"""Which kernel the fast engine runs: NumPy, or the compiled one (compiled.py).

Both give the same numbers bit for bit; they differ in cost. A run with the compiled kernel
takes about 2.8x less CPU a cycle at 100 x 1000 and 1.6-1.8x less at the default 20 x 100
(``make bench``, k = 2-16), but loading Numba and the cached machine code costs a process
about 0.65-0.8 s of CPU and 120 MiB of resident memory (Numba with LLVM; measured
on the 2-core development machine; the first compile on a machine 2-3 s more). ``auto``
therefore takes it when a run is large enough to repay the load, or when the process has
loaded it already (a sweep's worker, a search, a notebook: the load is paid once).
"""

from __future__ import annotations

import sys

#: Kernel names ``simulate(kernel=...)`` accepts.
KERNELS = ("auto", "numpy", "compiled")

#: ``auto`` compiles runs of at least this many simulated cycles: the load (0.65-0.8 s of
#: CPU) over the saving a cycle (2.1-7 ns in ``make bench``, the least at k = 2) breaks even
#: at about 3e8 cycles.
COMPILED_ABOVE_CYCLES = 300_000_000

#: The module whose presence in ``sys.modules`` means the compiled kernel is loaded.
COMPILED_MODULE = "sim.simulation.engines.compiled"


def kernel_for(kernel: str, cycles: float) -> str:
    """The kernel a run of about ``cycles`` simulated cycles uses: ``numpy`` or ``compiled``.

    ``kernel``: one of ``KERNELS``. ``auto``: compiled when ``cycles`` reaches
    ``COMPILED_ABOVE_CYCLES`` or the compiled kernel is already loaded in this process.
    """
    if kernel != "auto":
        return kernel
    if cycles >= COMPILED_ABOVE_CYCLES or COMPILED_MODULE in sys.modules:
        return "compiled"
    return "numpy"
