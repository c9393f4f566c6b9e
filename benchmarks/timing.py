"""How ``make bench`` measures: CPU time in interleaved rounds, median and min.

Every case of a comparison runs once per round, in a rotated order, for the same number of
rounds, so a slow spell on a shared machine hits all of them alike; ratios are taken
between medians (and between minima, the less noisy figure on a busy host). In-process
cases are timed with ``time.process_time`` (CPU of this process, all threads);
subprocesses with the children's rusage (user + system) around ``subprocess.run``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """CPU seconds of one case over the rounds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)


def cpu_of(fn: Callable[[], object]) -> float:
    """CPU seconds of one in-process call."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def cpu_of_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> float:
    """CPU seconds (user + system) of one subprocess run to completion (output dropped)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        list(argv),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(
    cases: Mapping[str, Callable[[], float]], rounds: int, warmup: int = 1
) -> dict[str, Timing]:
    """Run every case ``rounds`` times (after ``warmup`` untimed rounds), rotating their
    order each round; each case returns its own CPU seconds."""
    names = list(cases)
    for _ in range(warmup):
        for name in names:
            cases[name]()
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            out[name].append(cases[name]())
    return {n: Timing(tuple(v)) for n, v in out.items()}
