"""Parallel row: a sweep's wall time with 2 workers against 1, on this machine's cores.

``run_sweep`` of the seed over 16 acceptance rates (100 replications x 100 requests a
point) into a fresh store each time, with ``LocalExecutor(1)`` and ``LocalExecutor(2)``,
in interleaved rounds; wall time (``time.perf_counter``), since the point is to use more
cores. Results are identical whatever the worker count (tests/studies/test_sweep.py).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from timing import interleaved

from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario, with_overrides
from sim.studies.sweep import run_sweep

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
GRID = [("acceptance.alpha", tuple(round(0.60 + 0.02 * i, 2) for i in range(16)))]
GOAL = 0.6


def _sweep_wall(workers: int) -> float:
    base = with_overrides(load_scenario(SEED), {"simulation.replications": 100})
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        run_sweep(base, GRID, out, executor=LocalExecutor(workers))
        return time.perf_counter() - t0


def parallel_rows(rounds: int) -> list[tuple[str, str, str, str]]:
    t = interleaved({"one": lambda: _sweep_wall(1), "two": lambda: _sweep_wall(2)}, rounds)
    ratio = t["two"].median / t["one"].median
    cores = os.cpu_count()
    return [
        (
            f"sweep wall time: 2 workers / 1 worker ({cores} cores)",
            f"{ratio:.2f}",
            f"<= {GOAL}",
            "met" if ratio <= GOAL else "MISSED",
        ),
        (
            f"  16 points x 100x100: 1 worker {t['one'].median:.2f} s, 2 workers "
            f"{t['two'].median:.2f} s (min ratio {t['two'].min / t['one'].min:.2f})",
            "",
            "",
            "",
        ),
    ]
