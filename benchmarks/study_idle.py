"""Where a study's wall time goes beyond its CPU / cores, measured without trusting the wall.

On a shared machine the wall time of a study follows the other jobs' load, not the study.
This runs one ``specsim`` command in this process on the local pool (its default workers),
with every batch the study sends through its executor recorded: each task's own CPU (thread
time, taken in the worker) and the command's own CPU before, between and after its
batches. It then replays the study on ``--cores`` idle cores from those CPU times alone:
batches one after the other, each batch's tasks taken in the order sent by the first free
core, a lone task and the command's own work between batches on one core. Printed: the
batches and tasks, the replayed wall, the ideal (every CPU second spread evenly over the
cores), their ratio, and the idle core-seconds by batch size. The replay leaves out what
no CPU time shows (the pool's messages, a core's switch between processes), so it is a
lower bound of the idle machine's wall, not a measurement of it.

    .venv/bin/python benchmarks/study_idle.py crossover scenarios/SCENARIO.toml

The command's output goes to /dev/null (add ``--json`` to time the JSON path). Not part of
the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import heapq
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def _timed(fn: Callable[[Any], Any], item: Any) -> tuple[Any, float]:
    """``fn(item)`` and the CPU seconds of this thread it took (run in the worker)."""
    start = time.thread_time()
    result = fn(item)
    return result, time.thread_time() - start


class Recorder:
    """Wraps ``LocalExecutor.map_unordered``: each non-empty batch's tasks' CPU, this
    process's CPU when the batch was sent and when it ended, and whether its tasks ran in
    this process (a lone task, or one worker)."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, float, list[float], bool]] = []

    def install(self) -> None:
        from sim import parallel

        original = parallel.LocalExecutor.map_unordered
        recorder = self
        inside = threading.local()  # a task run in this process runs its own executor

        def map_unordered(
            self: Any, fn: Callable[[Any], Any], items: Sequence[Any]
        ) -> Iterator[tuple[int, Any]]:
            if not items or getattr(inside, "depth", 0):
                yield from original(self, fn, items)
                return
            sent = time.process_time()
            cpu = [0.0] * len(items)
            inside.depth = 1
            try:
                for i, (result, seconds) in original(self, functools.partial(_timed, fn), items):
                    cpu[i] = seconds
                    inside.depth = 0
                    yield i, result
                    inside.depth = 1
            finally:
                inside.depth = 0
            here = len(items) == 1 or self.workers <= 1
            recorder.batches.append((sent, time.process_time(), cpu, here))

        parallel.LocalExecutor.map_unordered = map_unordered  # type: ignore[method-assign]


def replay(
    batches: list[tuple[float, float, list[float], bool]], end_cpu: float, cores: int
) -> dict[str, Any]:
    """The study on ``cores`` idle cores from its CPU times alone (module docstring)."""
    serial = batches[0][0] if batches else end_cpu  # the command's start: imports, setup
    wall = 0.0
    idle: dict[int, float] = {}
    for j, (_, done, cpu, _) in enumerate(batches):
        free = [0.0] * min(cores, len(cpu))
        for seconds in cpu:  # in the order sent, each to the first free core
            heapq.heappush(free, heapq.heappop(free) + seconds)
        span = max(free)
        wall += span
        idle[len(cpu)] = idle.get(len(cpu), 0.0) + cores * span - sum(cpu)
        # the command's own work until the next batch
        serial += max(0.0, (batches[j + 1][0] if j + 1 < len(batches) else end_cpu) - done)
    tasks = sum(sum(cpu) for _, _, cpu, _ in batches)
    here = sum(sum(cpu) for _, _, cpu, inside in batches if inside)
    own = end_cpu - here  # the command's CPU (its messages to the pool included)
    return {
        "wall": wall + serial,
        "ideal": (tasks + own) / cores,
        "own": own,
        "serial": serial,
        "tasks": tasks,
        "idle": idle,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="specsim's arguments")
    args = parser.parse_args()
    recorder = Recorder()
    recorder.install()
    from sim.cli.process import run_process  # the command's own process settings

    load = os.getloadavg()[0]
    sys.argv = ["specsim", *args.command, *(() if "-q" in args.command else ("-q",))]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        run_process()
    end = time.process_time()
    got = replay(recorder.batches, end, args.cores)
    n = sum(len(cpu) for _, _, cpu, _ in recorder.batches)
    print(
        f"{' '.join(args.command[:1])}: {len(recorder.batches)} batches, {n} tasks; task CPU "
        f"{got['tasks']:.2f} s, the command's own {got['own']:.2f} s ({got['serial']:.2f} s of "
        f"it before, between and after the batches; load average "
        f"{load:.1f}-{os.getloadavg()[0]:.1f})"
    )
    print(
        f"  replayed on {args.cores} idle cores: {got['wall']:.2f} s against the ideal "
        f"{got['ideal']:.2f} s ({got['wall'] / got['ideal']:.3f}x; idle "
        f"{1 - got['ideal'] / got['wall']:.1%} of {args.cores} x the replayed wall)"
    )
    sizes = ", ".join(f"{k}: {v:.2f}" for k, v in sorted(got["idle"].items()))
    print(f"  idle core-seconds inside batches, by the batch's tasks: {sizes}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
