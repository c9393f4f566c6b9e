"""Parallel rows: a sweep's wall time with 2 workers against 1, on this machine's cores.

``run_sweep`` of the seed over 16 acceptance rates into a fresh store each time, with
``LocalExecutor(1)`` and ``LocalExecutor(2)``, in interleaved rounds; wall time
(``time.perf_counter``), since the point is to use more cores. Two sizes: 1,000
replications x 100 requests a point (about 0.2 s of simulation a point, a sweep one would
parallelise: the goal's row) and the earlier 100 x 100 (about 20 ms a point, so that the
parent's validation of every point and the pool's start weigh on it). Results are
identical whatever the worker count (tests/studies/test_sweep.py).

A control row times the same split on work that needs nothing from specsim: two equal
pure-Python loops in a 2-process pool against the two in sequence, in the same run. It
is what this machine gives two processes at the time (other jobs on a shared host take a
core); a sweep ratio near it is the host's limit, not the executor's.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from timing import interleaved

from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.sweep import run_sweep

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
GRID = [("acceptance.alpha", tuple(round(0.60 + 0.02 * i, 2) for i in range(16)))]
GOAL = 0.6
#: Replications a point: the goal's size, then the earlier small one.
SIZES = (1000, 100)


def _sweep_wall(workers: int, replications: int) -> float:
    base = with_overrides(load_scenario(SEED), {"simulation.replications": replications})
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        run_sweep(base, GRID, out, executor=LocalExecutor(workers))
        return time.perf_counter() - t0


def _loop(n: int = 4_000_000) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def _control_wall(workers: int) -> float:
    t0 = time.perf_counter()
    if workers == 1:
        _loop(), _loop()
    else:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool.map(_loop, [4_000_000, 4_000_000])
    return time.perf_counter() - t0


def parallel_rows(rounds: int) -> list[tuple[str, str, str, str]]:
    cores = os.cpu_count()
    c = interleaved({"one": lambda: _control_wall(1), "two": lambda: _control_wall(2)}, rounds)
    rows = [
        (
            "control: 2 pure-Python loops, 2-process pool / in sequence",
            f"{c['two'].median / c['one'].median:.2f}",
            "report",
            f"min ratio {c['two'].min / c['one'].min:.2f}",
        )
    ]
    for replications in SIZES:
        t = interleaved(
            {
                "one": lambda r=replications: _sweep_wall(1, r),
                "two": lambda r=replications: _sweep_wall(2, r),
            },
            rounds,
        )
        ratio = t["two"].median / t["one"].median
        goal = replications == SIZES[0]
        rows += [
            (
                f"sweep wall time: 2 workers / 1 worker ({cores} cores), "
                f"16 points x {replications}x100",
                f"{ratio:.2f}",
                f"<= {GOAL}" if goal else "report",
                ("met" if ratio <= GOAL else "MISSED") if goal else "",
            ),
            (
                f"  1 worker {t['one'].median:.2f} s, 2 workers {t['two'].median:.2f} s "
                f"(min ratio {t['two'].min / t['one'].min:.2f})",
                "",
                "",
                "",
            ),
        ]
    return rows
