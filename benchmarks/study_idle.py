"""Where a study's wall time goes beyond its CPU / cores, measured without trusting the wall.

On a shared machine the wall time of a study follows the other jobs' load, not the study.
This runs one ``specsim`` command in this process on the local pool (its default workers),
with every batch the study sends through its executor recorded: each task's own CPU (thread
time, taken in the worker) and the command's own CPU before, between and after its
batches. It then replays the study on ``--cores`` idle cores from those CPU times alone:
batches one after the other, each batch's tasks taken in the order sent by the first free
core, a lone task and the command's own work between batches on one core. Printed: the
batches and tasks, the replayed wall, the ideal (every CPU second spread evenly over the
cores), their ratio, the replay with every batch sent in decreasing measured CPU (the best
any order of the same tasks could do), the pool's workers' CPU outside their tasks, the
measured wall inside and outside the batches (at the machine's load), and the idle
core-seconds by batch size; ``--batches`` adds a line a batch (its caller in
sim/studies, tasks, CPU, longest task, replayed span and idle, the serial CPU after it,
its measured wall from first submit to last result) and the idle by caller. The replay
leaves out what no CPU time shows (the pool's messages, a core's switch between
processes), so it is a lower bound of the idle machine's wall, not a measurement of it.

    .venv/bin/python benchmarks/study_idle.py --batches crossover scenarios/SCENARIO.toml

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
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def _timed(fn: Callable[[Any], Any], item: Any) -> tuple[Any, float]:
    """``fn(item)`` and the CPU seconds of this thread it took (run in the worker)."""
    start = time.thread_time()
    result = fn(item)
    return result, time.thread_time() - start


def _caller() -> str:
    """The innermost functions of sim/studies on the stack (module:function < ...)."""
    names = [
        f"{f.filename.rsplit('/', 1)[-1][:-3]}:{f.name}"
        for f in traceback.extract_stack()
        if "/sim/studies/" in f.filename
    ]
    return " < ".join(reversed(names[-3:]))


class Recorder:
    """Wraps ``LocalExecutor.map_unordered``: each non-empty batch's tasks' CPU, this
    process's CPU when the batch was sent and when it ended, and whether its tasks ran in
    this process (a lone task, or one worker)."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, float, list[float], bool]] = []
        #: Each batch's caller: the innermost function of sim/studies that sent it.
        self.callers: list[str] = []
        #: Each batch's wall clock (perf_counter) at its first submit and its last result.
        self.walls: list[tuple[float, float]] = []
        self.start = time.perf_counter()

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
            sent, sent_wall = time.process_time(), time.perf_counter()
            recorder.callers.append(_caller())
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
            recorder.walls.append((sent_wall, time.perf_counter()))

        parallel.LocalExecutor.map_unordered = map_unordered  # type: ignore[method-assign]


def _span(cpu: Sequence[float], cores: int) -> float:
    """The wall of tasks of these CPU times on ``cores`` idle cores, in the order given,
    each to the first free core."""
    free = [0.0] * min(cores, len(cpu))
    for seconds in cpu:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def replay(
    batches: list[tuple[float, float, list[float], bool]], end_cpu: float, cores: int
) -> dict[str, Any]:
    """The study on ``cores`` idle cores from its CPU times alone (module docstring)."""
    serial = batches[0][0] if batches else end_cpu  # the command's start: imports, setup
    wall = oracle = 0.0
    idle: dict[int, float] = {}
    rows: list[tuple[float, float, float]] = []  # each batch's span, idle, serial work after
    for j, (_, done, cpu, _) in enumerate(batches):
        span = _span(cpu, cores)
        wall += span
        oracle += _span(sorted(cpu, reverse=True), cores)
        idle[len(cpu)] = idle.get(len(cpu), 0.0) + cores * span - sum(cpu)
        # the command's own work until the next batch
        after = max(0.0, (batches[j + 1][0] if j + 1 < len(batches) else end_cpu) - done)
        serial += after
        rows.append((span, cores * span - sum(cpu), after))
    tasks = sum(sum(cpu) for _, _, cpu, _ in batches)
    here = sum(sum(cpu) for _, _, cpu, inside in batches if inside)
    own = end_cpu - here  # the command's CPU (its messages to the pool included)
    return {
        "wall": wall + serial,
        # every batch sent in decreasing measured CPU (an order no scheduler knows ahead)
        "oracle": oracle + serial,
        "ideal": (tasks + own) / cores,
        "own": own,
        "serial": serial,
        "tasks": tasks,
        "idle": idle,
        "rows": rows,
        "before": batches[0][0] if batches else end_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--batches", action="store_true", help="a line a batch, and the idle by caller"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="specsim's arguments")
    args = parser.parse_args()
    recorder = Recorder()
    recorder.install()
    from sim.cli.process import run_process  # the command's own process settings

    load = os.getloadavg()[0]
    sys.argv = ["specsim", *args.command, *(() if "-q" in args.command else ("-q",))]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        run_process()
    end, end_wall = time.process_time(), time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the pool's ended workers
    workers_cpu = children.ru_utime + children.ru_stime
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
    print(
        f"  with every batch's tasks sent in decreasing measured CPU (known only after): "
        f"{got['oracle']:.2f} s"
    )
    outside = workers_cpu - sum(sum(c) for _, _, c, here in recorder.batches if not here)
    print(
        f"  the pool's workers: {workers_cpu:.2f} s of CPU, {outside:.2f} s of it outside "
        "their tasks (receiving tasks, returning results, waiting)"
    )
    inside, overlaps = _union(recorder.walls)
    total = end_wall - recorder.start
    print(
        f"  measured wall (this machine, at its load): {total:.2f} s from the command's start "
        f"to its end, {inside:.2f} s of it with a batch sent and not done, "
        f"{total - inside:.2f} s outside the batches ({overlaps} batches sent while another "
        "ran: a study's threads sharing the pool, which the replay runs one after the other)"
    )
    sizes = ", ".join(f"{k}: {v:.2f}" for k, v in sorted(got["idle"].items()))
    print(f"  idle core-seconds inside batches, by the batch's tasks: {sizes}")
    if args.batches:
        _print_batches(recorder, got)
    sys.stdout.flush()


def _union(walls: Sequence[tuple[float, float]]) -> tuple[float, int]:
    """The wall seconds covered by the batches' (sent, done) intervals, and how many were
    sent before the one sent before them had ended."""
    covered, reach, overlaps = 0.0, float("-inf"), 0
    for sent, done in sorted(walls):
        if sent < reach:
            overlaps += 1
        covered += max(0.0, done - max(sent, reach))
        reach = max(reach, done)
    return covered, overlaps


def _print_batches(recorder: Recorder, got: dict[str, Any]) -> None:
    """A line a batch (its tasks, CPU, longest task, replayed span, idle core-seconds, the
    command's serial CPU after it, its measured wall from first submit to last result, its
    caller), then the idle core-seconds by caller."""
    print(f"  serial work before the first batch: {got['before']:.2f} s")
    print("  batch tasks    CPU  longest   span   idle  after   wall  caller")
    by: dict[str, list[float]] = {}
    for j, ((_, _, cpu, _), (span, idle, after), (sent, done), caller) in enumerate(
        zip(recorder.batches, got["rows"], recorder.walls, recorder.callers, strict=True)
    ):
        print(
            f"  {j:5d} {len(cpu):5d} {sum(cpu):6.2f} {max(cpu):8.2f} {span:6.2f} "
            f"{idle:6.2f} {after:6.2f} {done - sent:6.2f}  {caller}"
        )
        acc = by.setdefault(caller, [0, 0.0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += idle
        acc[2] += after
        acc[3] += sum(cpu)
    print("  by caller: batches, idle core-seconds inside, serial after, task CPU")
    for caller, (n, idle, after, cpu) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"    {int(n):3d} {idle:6.2f} {after:6.2f} {cpu:7.2f}  {caller}")


if __name__ == "__main__":
    main()
