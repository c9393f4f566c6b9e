"""A progress bar on stderr for Monte Carlo runs that take more than about a second."""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

import click

if TYPE_CHECKING:
    from sim.binding.bound import Bound

#: Seconds a run must have taken before the bar appears.
SHOW_AFTER_S = 1.0


def announce_slow_intervals(
    bounds: Iterable[Bound], enabled: bool = True, stream: TextIO | None = None
) -> None:
    """One line on stderr (a terminal only, not with ``--quiet``) before the 90% intervals
    of chains whose acceptance is a workload mix or a per-request spread: each distinct
    draw of their acceptance inputs re-builds every class's Beta quadrature (some 500-650
    draws on the shipped mix), which no bar follows. ``bounds``: the bound scenarios."""
    # lazy: the scenario layer only when a command runs, not for --help (start-up)
    from sim.uncertainty.perturb import is_acceptance_input
    from sim.uncertainty.sampled_draws import acceptance_propagated

    out = stream or sys.stderr
    if not (enabled and out.isatty()):
        return
    slow = False
    for bound in bounds:
        sc = bound.scenario
        if sc.speculation.is_tree or acceptance_propagated(sc):
            continue
        slow = slow or any(is_acceptance_input(inp.field) for inp in bound.inputs)
    if slow:
        click.echo(
            "computing the 90% intervals: a mix or per-request spread re-builds its rates in"
            " each of some 500 draws (20-40 s)...",
            file=out,
        )


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min`` (rounded up to the unit shown last)."""
    s = max(0, math.ceil(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    m = math.ceil(s / 60)
    return f"{m // 60} h {m % 60} min"


def status_text(done: int, total: int, elapsed_s: float) -> str:
    """``12/40, about 3 min 5 s left``: the count and the time left at the pace so far
    (``elapsed_s`` / ``done`` a step, times the steps left); the count alone before the
    first step, ``done`` when nothing is left."""
    if done >= total:
        return f"{done}/{total}, done"
    if done <= 0:
        return f"{done}/{total}"
    left = elapsed_s / done * (total - done)
    return f"{done}/{total}, about {duration_text(left)} left"


class ProgressBar:
    """``progress(done, total)`` callback for ``sim.simulation.simulate.simulate`` and the serving
    studies.

    Draws nothing when ``enabled`` is false (``--quiet``) or stderr is not a terminal, and
    nothing until ``SHOW_AFTER_S`` seconds have passed. A study that runs its simulations
    in batches (best-k's selection, then its check) reports each batch from 1 to its own
    total: a count that restarts, or a new total, closes the bar and opens the next
    ("simulating, stage 2"), so that a finished bar is never left standing while the
    command works on. Beside the bar, ``status_text``: the count out of the total and the
    time left at the pace so far (a bisection's total is its bound: it may end early). A
    total of None is a count without an end: the bar moves and counts but shows no
    percentage (no study passes one now; kept for callers that cannot bound their work).
    Use as a context manager.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._stream.isatty()
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = 0
        self._done = 0
        self._total: int | None = -1  # none yet (None: a count without a total)
        self._stage = 0
        self._stage_start = self._start

    def __call__(self, done: int, total: int | None) -> None:
        if not self._enabled:
            return
        if done <= self._done or total != self._total:  # a new batch of runs
            self._close()
            self._stage += 1
            self._total = total
            self._stage_start = time.monotonic()
        self._done = done
        if self._bar is None:
            if time.monotonic() - self._start < SHOW_AFTER_S:
                return
            label = "simulating" if self._stage == 1 else f"simulating, stage {self._stage}"
            if total is None:  # no length: click draws a moving mark and the count
                label += ", one load at a time (replications run)"
                self._bar = click.progressbar(
                    itertools.count(), label=label, file=self._stream, show_pos=True
                )
            else:
                self._bar = click.progressbar(
                    length=total,
                    label=label,
                    file=self._stream,
                    show_eta=False,  # status_text's estimate instead (testable, per stage)
                    item_show_func=lambda text: text,
                )
            self._bar.__enter__()
            self._shown = 0
        text = None
        if total is not None:
            text = status_text(done, total, time.monotonic() - self._stage_start)
        self._bar.update(done - self._shown, text)
        self._shown = done

    def _close(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*(exc or (None, None, None)))
            self._bar = None

    def __enter__(self) -> ProgressBar:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(*exc)
